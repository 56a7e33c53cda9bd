"""What runs on the caller's thread (the application's thread, or its event loop): the core both facades share,
and the decoding of fetched records in ``poll``/``poll_arrow``.

Private. Code here reads only the shared state (``_state/``) and the background's published snapshot; it never
touches an object the background thread owns (``tests/unit/test_threads.py`` checks it).
"""
