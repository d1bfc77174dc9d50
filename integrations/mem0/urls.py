"""The routes of Mem0's platform API that the `mem0ai` MemoryClient calls, under /api/mem0/
(the client's host: `MemoryClient(api_key=..., host="https://<server>/api/mem0")`)."""

from django.urls import path

from integrations.mem0 import views

app_name = "mem0"

urlpatterns = [
    path("v1/ping/", views.PingView.as_view(), name="ping"),
    path("v3/memories/add/", views.AddView.as_view(), name="add"),
    path("v3/memories/", views.MemoryListView.as_view(), name="list"),
    path("v3/memories/search/", views.SearchView.as_view(), name="search"),
    path("v1/memories/", views.MemoriesView.as_view(), name="memories"),
    path("v1/memories/<str:memory_id>/", views.MemoryDetailView.as_view(), name="memory"),
    path("v1/memories/<str:memory_id>/history/", views.MemoryHistoryView.as_view(), name="history"),
    path("v1/entities/", views.EntitiesView.as_view(), name="entities"),
    path("v2/entities/<str:entity_type>/<str:entity_id>/", views.EntityView.as_view(), name="entity"),
    path("v1/batch/", views.BatchView.as_view(), name="batch"),
    path("v1/feedback/", views.FeedbackView.as_view(), name="feedback"),
    path("v1/exports/", views.NeedsLanguageModelView.as_view(), name="export-create"),
    path("v1/exports/get/", views.NeedsLanguageModelView.as_view(), name="export-get"),
    path("v1/summary/", views.NeedsLanguageModelView.as_view(), name="summary"),
]
