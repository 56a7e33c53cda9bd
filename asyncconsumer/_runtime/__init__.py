"""The wiring of one consumer: the builder, the network thread, the event processor, the fetch collector.

Private: nothing here is public API. Both facades (``consumer.py``, ``sync.py``) sit on ``core.ConsumerCore``.
"""
