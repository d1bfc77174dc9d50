from django.urls import path

from memories.api import retrieval_views, views

app_name = "api"

urlpatterns = [
    path("memories", views.MemoryCollectionView.as_view(), name="memories"),
    path("memories/weak", views.WeakMemoriesView.as_view(), name="memories-weak"),
    path("memories/<uuid:memory_id>", views.MemoryDetailView.as_view(), name="memory"),
    path("memories/<uuid:memory_id>/restore", views.MemoryRestoreView.as_view(), name="memory-restore"),
    path("memories/<uuid:memory_id>/confirm", views.MemoryConfirmView.as_view(), name="memory-confirm"),
    path("memories/<uuid:memory_id>/supersede", views.MemorySupersedeView.as_view(), name="memory-supersede"),
    path("memories/<uuid:memory_id>/correct", views.MemorySupersedeView.as_view(), name="memory-correct"),
    path("memories/<uuid:memory_id>/feedback", views.MemoryFeedbackView.as_view(), name="memory-feedback"),
    path("memories/<uuid:memory_id>/history", views.MemoryHistoryView.as_view(), name="memory-history"),
    path("memories/<uuid:memory_id>/explain", views.MemoryExplainView.as_view(), name="memory-explain"),
    path("memories/<uuid:memory_id>/tags", views.MemoryTagsView.as_view(), name="memory-tags"),
    path("memories/<uuid:memory_id>/tags/<str:tag>", views.MemoryTagDetailView.as_view(), name="memory-tag"),
    path("memories/<uuid:memory_id>/relationships", views.MemoryRelationshipsView.as_view(),
         name="memory-relationships"),
    path("relationships/<uuid:relationship_id>", views.RelationshipDetailView.as_view(), name="relationship"),
    path("entities", views.EntityCollectionView.as_view(), name="entities"),
    path("entities/<uuid:entity_id>", views.EntityDetailView.as_view(), name="entity"),
    path("sessions", views.SessionCollectionView.as_view(), name="sessions"),
    path("sessions/<uuid:session_id>", views.SessionDetailView.as_view(), name="session"),
    path("sessions/<uuid:session_id>/close", views.SessionCloseView.as_view(), name="session-close"),
    path("sessions/<uuid:session_id>/memories", views.SessionMemoriesView.as_view(), name="session-memories"),
    path("erase", views.EraseView.as_view(), name="erase"),
    path("stats", views.StatsView.as_view(), name="stats"),
    path("search", retrieval_views.SearchView.as_view(), name="search"),
    path("context", retrieval_views.ContextView.as_view(), name="context"),
    path("retrieve", retrieval_views.RetrieveView.as_view(), name="retrieve"),
    path("hot", retrieval_views.HotView.as_view(), name="hot"),
    path("retrieval-events", retrieval_views.RetrievalEventListView.as_view(), name="retrieval-events"),
    path("retrieval-events/<uuid:event_id>", retrieval_views.RetrievalEventDetailView.as_view(),
         name="retrieval-event"),
    path("retrieval-events/<uuid:event_id>/replay", retrieval_views.RetrievalEventReplayView.as_view(),
         name="retrieval-event-replay"),
]
