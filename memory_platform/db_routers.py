class OwnerMigratesRouter:
    """Schema changes never go through `default`, the runtime role.

    Reads and writes go to `default` unless code asks for `owner` explicitly. migrate runs as
    `owner` (or any other alias an operator configures for maintenance); the runtime role
    cannot create tables, and a migration aimed at it must not be recorded as applied.
    """

    def allow_migrate(self, db, app_label, model_name=None, **hints):
        return db != "default"
