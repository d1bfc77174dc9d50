from django.contrib.admin.apps import AdminConfig as DjangoAdminConfig


class AdminConfig(DjangoAdminConfig):
    """django.contrib.admin with the site that runs administration as the service account."""

    default_site = "memory_platform.admin_site.MemoryPlatformAdminSite"
