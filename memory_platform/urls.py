from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from memory_platform import health

urlpatterns = [
    path("health", health.health_view, name="health"),
    path("api/v1/", include("memories.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("admin/", admin.site.urls),
    path("console/", include("console.urls")),
    path("", RedirectView.as_view(pattern_name="console:home", permanent=False)),
]
