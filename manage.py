#!/usr/bin/env python
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_platform.settings.base")
    from django.core.management import execute_from_command_line

    from memory_platform import local_services

    # The settings only name the embedded servers; every command finds them running.
    local_services.start_for_settings()
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
