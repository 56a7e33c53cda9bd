"""A 3-node Apache Kafka cluster with a Toxiproxy proxy in front of every broker, for the network-fault tests.

Each broker's client listener (PLAINTEXT) binds its own port and advertises its proxy's, so every connection a client
makes after bootstrap goes through the proxy of the broker it is meant for; the nodes' INTERNAL listener (between the
brokers, and for the tests' admin client and producer) and their CONTROLLER listener stay direct, so a fault on a
proxy is a fault between the consumer and that broker only.

    cluster = ProxiedCluster.start()
    with cluster.proxy(2).toxic("timeout", stream="downstream", timeout=0):
        ...                                   # broker 2 black-holed for the consumers, and for nothing else
    cluster.heal()                            # every proxy enabled, every toxic gone
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import attrs

from tests.support.kafka_broker import HOST, KafkaCluster
from tests.support.toxiproxy import Proxy, ToxiproxyServer

FAULT_SETTINGS: Mapping[str, str] = {
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
    "group.consumer.session.timeout.ms": "6000",
    "group.share.session.timeout.ms": "6000",
    "auto.leader.rebalance.enable": "false",
}
"""Sessions of 6 s for KIP-848 and share members (the classic ones set theirs), so faults around them stay short;
leadership moves only when a test moves it (a fault never moves one: the brokers talk to each other directly)."""

_PLACEHOLDER = (HOST, 1)
"""Where a proxy points until its broker has a port: nothing listens on port 1."""


@attrs.define(slots=True)
class ProxiedCluster:
    """The cluster, its Toxiproxy server and the proxy in front of each node (by node id)."""

    kafka: KafkaCluster
    toxiproxy: ToxiproxyServer
    proxies: dict[int, Proxy]
    kind: ClassVar[str] = "kafka"

    @classmethod
    def start(cls, nodes: int = 3, settings: Mapping[str, str] = FAULT_SETTINGS) -> ProxiedCluster:
        """Starts Toxiproxy, a proxy per node on a port of its choosing, then the nodes advertising those ports, and
        points each proxy at its node's client listener (the proxies hold their ports from the start: no other process
        can take one while the nodes start)."""
        server = ToxiproxyServer.start()
        try:
            placeholders = [
                server.create_proxy(f"broker-{i}", listen=(HOST, 0), upstream=_PLACEHOLDER) for i in range(1, nodes + 1)
            ]
            listening = [server.client.proxy(p.name) for p in placeholders]  # the ports the server picked
            kafka = KafkaCluster.start(nodes, advertised_ports=[p.listen[1] for p in listening], settings=settings)
        except BaseException:
            server.stop(keep_log=True)
            raise
        try:
            proxies = {
                node.node_id: proxy.retarget((HOST, node.port))
                for node, proxy in zip(kafka.nodes, listening, strict=True)
            }
        except BaseException:
            kafka.stop(keep_logs=True)
            server.stop(keep_log=True)
            raise
        return cls(kafka, server, proxies)

    @property
    def bootstrap_servers(self) -> str:
        """The proxies' addresses: what the consumers under test connect to."""
        return self.kafka.bootstrap_servers

    @property
    def direct_servers(self) -> str:
        """The nodes' internal listeners, past every proxy: for the producer and the checks."""
        return ",".join(f"{HOST}:{n.internal_port}" for n in self.kafka.nodes)

    def proxy(self, node_id: int) -> Proxy:
        return self.proxies[node_id]

    def heal(self) -> None:
        """Every proxy enabled again and every toxic removed."""
        self.toxiproxy.reset()

    def stop(self) -> None:
        try:
            self.toxiproxy.stop()
        finally:
            self.kafka.stop()

    def log_tail(self, lines: int = 20) -> str:
        return f"{self.kafka.log_tail(lines)}\n--- toxiproxy ---\n{self.toxiproxy.log_tail(lines)}"
