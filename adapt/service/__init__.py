"""Service core shared by the API and the workers: submit, dispatch and execute persisted tasks.

No web or queue framework imports here (the Celery app and FastAPI app live in workers/ and
api/); SQLAlchemy is used through adapt.store.
"""
