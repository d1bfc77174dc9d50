from django.contrib.auth import views as auth_views
from django.urls import path

from console.sign_in import SignInView
from console.views import (
    agents,
    conflicts,
    dashboard,
    embeddings,
    entities,
    erasure,
    events,
    memories,
    portability,
    review,
    sessions,
)

app_name = "console"

org = "<slug:org_slug>/"
urlpatterns = [
    path("", dashboard.home, name="home"),
    path("sign-in/", SignInView.as_view(), name="sign-in"),
    path("sign-out/", auth_views.LogoutView.as_view(), name="sign-out"),
    path(org, dashboard.dashboard_view, name="dashboard"),
    path(org + "memories/", memories.memory_list, name="memories"),
    path(org + "memories/bulk", memories.memory_bulk, name="memory-bulk"),
    path(org + "memories/<uuid:memory_id>/", memories.memory_detail, name="memory"),
    path(org + "memories/<uuid:memory_id>/diff", memories.memory_diff, name="memory-diff"),
    path(org + "memories/<uuid:memory_id>/edit", memories.memory_edit, name="memory-edit"),
    path(org + "memories/<uuid:memory_id>/supersede", memories.memory_supersede, name="memory-supersede"),
    path(org + "memories/<uuid:memory_id>/tags", memories.memory_tags_add, name="memory-tags-add"),
    # The tag travels in the body: a tag may hold "/" (or be "..") and still be removed.
    path(org + "memories/<uuid:memory_id>/tags/remove", memories.memory_tag_remove, name="memory-tag-remove"),
    path(org + "memories/<uuid:memory_id>/<slug:action>", memories.memory_action, name="memory-action"),
    path(org + "entities/", entities.entity_list, name="entities"),
    path(org + "entities/<uuid:entity_id>/", entities.entity_detail, name="entity"),
    path(org + "review/", review.review_queue, name="review"),
    path(org + "review/<uuid:memory_id>/<slug:decision>", review.review_decide, name="review-decide"),
    path(org + "conflicts/", conflicts.conflict_list, name="conflicts"),
    path(org + "conflicts/<slug:kind>/<uuid:conflict_id>/", conflicts.conflict_detail, name="conflict"),
    path(org + "conflicts/<slug:kind>/<uuid:conflict_id>/resolve", conflicts.conflict_resolve,
         name="conflict-resolve"),
    path(org + "sessions/", sessions.session_list, name="sessions"),
    path(org + "sessions/<uuid:session_id>/", sessions.session_detail, name="session"),
    path(org + "events/", events.event_list, name="events"),
    path(org + "events/<uuid:event_id>/", events.event_detail, name="event"),
    path(org + "events/<uuid:event_id>/replay", events.event_replay, name="event-replay"),
    path(org + "export/", portability.portability, name="portability"),
    path(org + "export/download", portability.export_download, name="export-download"),
    path(org + "export/import", portability.import_upload, name="import-upload"),
    path(org + "export/imports/<uuid:job_id>/", portability.import_progress, name="import"),
    path(org + "erase/", erasure.erase, name="erase"),
    path(org + "erase/<uuid:job_id>/", erasure.erase_progress, name="erasure"),
    path(org + "embeddings/", embeddings.embeddings, name="embeddings"),
    path(org + "embeddings/<slug:action>", embeddings.embeddings_change, name="embeddings-change"),
    path(org + "agents/", agents.agent_list, name="agents"),
    path(org + "agents/<uuid:agent_id>/", agents.agent_detail, name="agent"),
    path(org + "agents/<uuid:agent_id>/keys", agents.api_key_issue, name="api-key-issue"),
    path(org + "agents/<uuid:agent_id>/keys/<uuid:key_id>/revoke", agents.api_key_revoke, name="api-key-revoke"),
]
