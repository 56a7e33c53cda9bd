"""Generated from Apache Kafka's message definitions (kafka-clients 4.4.0) by scripts/gen_protocol.py;
do not edit.

One module per API, at the versions we speak; ``api_keys`` holds every API key.

- ``api_versions`` (API key 18): v0-3 of Kafka's 0-5
- ``metadata`` (API key 3): v1-13 of Kafka's 0-13
- ``fetch`` (API key 1): v4-12 of Kafka's 4-18
- ``list_offsets`` (API key 2): v1-9 of Kafka's 1-11
- ``offset_commit`` (API key 8): v2-9 of Kafka's 2-10
- ``offset_fetch`` (API key 9): v1-9 of Kafka's 1-10
- ``find_coordinator`` (API key 10): v1-4 of Kafka's 0-6
- ``join_group`` (API key 11): v2-9 of Kafka's 0-9
- ``sync_group`` (API key 14): v1-5 of Kafka's 0-5
- ``heartbeat`` (API key 12): v1-4 of Kafka's 0-4
- ``leave_group`` (API key 13): v1-5 of Kafka's 0-5
- ``describe_groups`` (API key 15): v0-5 of Kafka's 0-6
- ``sasl_handshake`` (API key 17): v1 of Kafka's 0-1
- ``sasl_authenticate`` (API key 36): v0-2 of Kafka's 0-2
- ``offset_for_leader_epoch`` (API key 23): v2-4 of Kafka's 2-4
- ``consumer_group_heartbeat`` (API key 68): v0-1 of Kafka's 0-1
- ``consumer_group_describe`` (API key 69): v0-1 of Kafka's 0-1
- ``get_telemetry_subscriptions`` (API key 71): v0 of Kafka's 0
- ``push_telemetry`` (API key 72): v0 of Kafka's 0
- ``share_group_heartbeat`` (API key 76): v1 of Kafka's 1
- ``share_group_describe`` (API key 77): v1 of Kafka's 1
- ``share_fetch`` (API key 78): v1-2 of Kafka's 1-2
- ``share_acknowledge`` (API key 79): v1-2 of Kafka's 1-2
- ``describe_share_group_offsets`` (API key 90): v0-1 of Kafka's 0-1
- ``incremental_alter_configs`` (API key 44): v0-1 of Kafka's 0-1
- ``list_groups`` (API key 16): v0-5 of Kafka's 0-5
- ``delete_groups`` (API key 42): v0-3 of Kafka's 0-3
- ``offset_delete`` (API key 47): v0 of Kafka's 0
- ``create_topics`` (API key 19): v2-7 of Kafka's 2-7
- ``delete_topics`` (API key 20): v1-5 of Kafka's 1-6
- ``create_partitions`` (API key 37): v0-3 of Kafka's 0-3
- ``describe_cluster`` (API key 60): v0-2 of Kafka's 0-2
- ``describe_configs`` (API key 32): v1-4 of Kafka's 1-4
- ``consumer_protocol``: v0-3 of Kafka's 0-3
"""
