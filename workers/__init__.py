"""Queue glue: how task ids reach the worker host (``adapt.service.host``, which owns the
lifecycle: context, heartbeat, sweeper, tasks in flight, drain). Two thin drivers: the Celery
app and its thin task with the per-process event loop, and the embedded in-process runner.

- ``workers.celery_app.start_worker(settings)``: run a Celery worker (``adapt worker``).
- ``workers.dispatchers.make_dispatcher(settings, sessions)``: the API's dispatcher
  (Celery with a broker, else the embedded runner).
- ``workers.embedded.EmbeddedRunner``: runs tasks on the current event loop.
"""
