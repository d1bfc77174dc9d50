"""The routes of LangGraph's store API (langgraph_api.api.store.store_routes), under /api/v1/."""

from django.urls import path

from integrations.langgraph_store import views

app_name = "langgraph_store"

urlpatterns = [
    path("store/items", views.StoreItemView.as_view(), name="store-item"),
    path("store/items/search", views.StoreSearchView.as_view(), name="store-search"),
    path("store/namespaces", views.StoreNamespacesView.as_view(), name="store-namespaces"),
]
