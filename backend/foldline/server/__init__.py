"""The local HTTP API (docs/api.md): FastAPI app, security, event streams, `foldline serve`.

`app.create_app` builds the app, `runner.start_server_in_thread` serves it, and
`launch.run_serve` is `foldline serve`. Nothing is imported here, so `foldline serve`
and the desktop shell load only what they use.
"""
