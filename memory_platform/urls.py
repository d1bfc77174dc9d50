from csp.constants import UNSAFE_INLINE
from csp.decorators import csp_update
from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from memory_platform import health, server_error

urlpatterns = [
    path("health", health.health_view, name="health"),
    # Browsers ask for /favicon.ico on any page that names no icon (the admin, the API docs).
    path("favicon.ico", RedirectView.as_view(url=static("favicon.svg"), permanent=False)),
    path("api/v1/", include("memories.api.urls")),
    # LangGraph's store API (docs/adr/0040): the platform's namespace store in LangGraph's shapes.
    path("api/v1/", include("integrations.langgraph_store.urls")),
    # Mem0's platform API (docs/adr/0044): what the mem0ai client calls, its host set to /api/mem0.
    path("api/mem0/", include("integrations.mem0.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # Swagger UI's start-up script comes from a URL, not inline; its page carries a <style>
    # element of drf-spectacular's template, so this page alone allows inline styles.
    path("api/docs/", csp_update({"style-src": [UNSAFE_INLINE]})(
        SpectacularSwaggerSplitView.as_view(url_name="schema")), name="api-docs"),
    path("admin/", admin.site.urls),
    path("console/", include("console.urls")),
    path("", RedirectView.as_view(pattern_name="console:home", permanent=False)),
]

# What an unhandled error answers, wherever it was raised: a view's failure to reach the database
# is answered by the request's middleware, but one raised by middleware after the view (the
# session saved as the response leaves, which Django reports as a 400) reaches only these.
handler400 = server_error.bad_request
handler500 = server_error.server_error
