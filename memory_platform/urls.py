from django.contrib import admin
from django.urls import path

from memory_platform import health

urlpatterns = [
    path("health", health.health_view, name="health"),
    path("admin/", admin.site.urls),
]
