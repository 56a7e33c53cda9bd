"""Helpers the tests share: brokers' fronts and proxies, producing and consuming, hand-built data, waiting."""
