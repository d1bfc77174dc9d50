#!/usr/bin/env python
import os
import sys

# Commands that may start on a data folder with no database: those that make it (run, migrate)
# and those that read none of it. Any other command says so instead of starting an empty
# PostgreSQL there.
CREATE_DATABASE = {"run", "migrate",
                   "makemigrations", "check", "help", "version", "collectstatic", "findstatic", "diffsettings",
                   "spectacular"}
USAGE = "--data-dir PATH (any command, before or after its name) chooses the data folder"


def take_data_dir(argv: list[str]) -> list[str]:
    """argv without its --data-dir PATH / --data-dir=PATH, which sets MEMORY_PLATFORM_DATA_DIR
    (before Django reads argv, so every command accepts it)."""
    rest, index = [], 0
    while index < len(argv):
        argument = argv[index]
        if argument == "--data-dir":
            if index + 1 >= len(argv) or not argv[index + 1]:
                sys.exit(f"manage.py: {USAGE}; it needs a PATH")
            os.environ["MEMORY_PLATFORM_DATA_DIR"] = os.path.abspath(os.path.expanduser(argv[index + 1]))
            index += 2
            continue
        if argument.startswith("--data-dir="):
            value = argument.split("=", 1)[1]
            if not value:
                sys.exit(f"manage.py: {USAGE}; it needs a PATH")
            os.environ["MEMORY_PLATFORM_DATA_DIR"] = os.path.abspath(os.path.expanduser(value))
        else:
            rest.append(argument)
        index += 1
    return rest


def refuse_empty_data_dir(command: str) -> None:
    """A command that needs the product's database, against a data folder with none: a message
    naming the folder and how to choose another, not a second, empty PostgreSQL left running."""
    from django.conf import settings

    from memory_platform import local_services

    if not settings.EMBEDDED_POSTGRES or command in CREATE_DATABASE or local_services.has_database():
        return
    folder = local_services.data_dir()
    lines = [f"manage.py {command}: no database in the data folder {folder}.",
             "Nothing was started. Choose the folder `scripts/run` serves:",
             f"  manage.py {command} --data-dir PATH   (or export MEMORY_PLATFORM_DATA_DIR=PATH)"]
    last = local_services.last_served_data_dir()
    if last is not None and last != folder:
        lines.append(f"The last `scripts/run` served {last}.")
    lines.append("A new folder gets its database from `scripts/run --data-dir PATH` "
                 "(or `manage.py migrate --data-dir PATH`).")
    sys.exit("\n".join(lines))


def refuse_serving_twice(command: str) -> None:
    """`run` on the data folder a running `run` serves (found by default, as every command
    finds it): a message, before anything starts, not a second supervisord fighting the first."""
    from memory_platform import local_services

    serving = local_services.serving_process()
    if command == "run" and serving is not None and serving[0] == local_services.data_dir():
        sys.exit(f"manage.py run: {serving[0]} is already served (process {serving[1]}). Stop that one "
                 "first, or serve another data folder: scripts/run --data-dir PATH")


def main(argv: list[str] | None = None) -> None:
    argv = take_data_dir(sys.argv if argv is None else argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_platform.settings.base")
    from django.core.management import execute_from_command_line
    from django.core.management.base import CommandParser, handle_default_options

    from memory_platform import local_services

    # --settings and --pythonpath, read as Django reads them, before the settings load here.
    options = CommandParser(add_help=False, allow_abbrev=False)
    options.add_argument("--settings")
    options.add_argument("--pythonpath")
    handle_default_options(options.parse_known_args(argv[2:])[0])
    command = argv[1] if len(argv) > 1 and not argv[1].startswith("-") else "help"
    refuse_serving_twice(command)
    refuse_empty_data_dir(command)
    # The settings only name the embedded servers; every command finds them running.
    local_services.start_for_settings()
    execute_from_command_line(argv)


if __name__ == "__main__":
    main()
