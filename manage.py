#!/usr/bin/env python
import os
import sys


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv if argv is None else argv
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_platform.settings.base")
    from django.core.management import execute_from_command_line
    from django.core.management.base import CommandParser, handle_default_options

    from memory_platform import local_services

    # --settings and --pythonpath, read as Django reads them, before the settings load here.
    options = CommandParser(add_help=False, allow_abbrev=False)
    options.add_argument("--settings")
    options.add_argument("--pythonpath")
    handle_default_options(options.parse_known_args(argv[2:])[0])
    # The settings only name the embedded servers; every command finds them running.
    local_services.start_for_settings()
    execute_from_command_line(argv)


if __name__ == "__main__":
    main()
