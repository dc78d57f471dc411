"""Queue glue: the Celery app and its thin task, the per-process event loop, the sweeper loop,
and the embedded in-process runner.

- ``workers.celery_app.start_worker(settings)``: run a Celery worker (``adapt worker``).
- ``workers.dispatchers.make_dispatcher(settings, sessions)``: the API's dispatcher
  (Celery with a broker, else the embedded runner).
- ``workers.embedded.EmbeddedRunner``: runs tasks on the current event loop.
"""
