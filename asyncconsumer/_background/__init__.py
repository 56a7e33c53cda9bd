"""What runs on the consumer's background thread: the loop, the event processor, the group wiring, and the builder
that creates all of it (and the shared state) before the thread starts.

Private. Nothing here runs user code or imports the caller's side; what the caller may see crosses in ``_state/``.
"""
