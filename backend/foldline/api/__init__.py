"""The public shapes of the HTTP API and its events: pydantic models in camelCase.

They sit below the chat layer so that the chat service, the SSE stream and the routes all
shape an object the same way; they import nothing but the engine's core types.
"""
