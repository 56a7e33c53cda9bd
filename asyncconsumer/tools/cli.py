"""The ``asyncconsumer`` command: its parser, its logging and the dispatch to ``demo``, ``broker``, ``consume``,
``share-consume``, ``groups describe``, ``share-groups describe``, ``share-groups configure`` and ``offsets`` (each
in a module of its own).

Output for people goes to stdout; errors are one ``error: ...`` line on stderr and a non-zero exit status; a
progress line goes to stderr when it is a terminal, and when it is not, one plain line says the first connection
failure (so a command waiting on an unreachable broker does not sit silent until ``--timeout-ms``). Logs stay in
structlog and are off unless ``--verbose``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Sequence

from asyncconsumer.errors import GroupIdNotFoundError, KafkaError, UnknownTopicOrPartitionError
from asyncconsumer.tools._admin_commands import (
    run_offsets,
    run_share_groups_configure,
    run_share_groups_describe,
)
from asyncconsumer.tools._broker_command import run_broker
from asyncconsumer.tools._common import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_NOT_FOUND,
    UsageError,
    err,
    seconds,
)
from asyncconsumer.tools._consume import FORMATS, run_consume
from asyncconsumer.tools._demo import run_demo
from asyncconsumer.tools._group_commands import (
    run_groups_delete,
    run_groups_delete_offsets,
    run_groups_list,
    run_groups_reset_offsets,
    run_topics_create,
    run_topics_delete,
    run_topics_describe,
    run_topics_list,
)
from asyncconsumer.tools._group_describe import run_groups_describe
from asyncconsumer.tools._share_consume import ACKS, run_share_consume
from asyncconsumer.tools.admin import GroupNotFoundError, TopicNotFoundError

DEFAULT_TIMEOUT_MS = 30_000


def _add_verbose(parser: argparse.ArgumentParser, *, top: bool = False) -> None:
    """``-v``/``--verbose`` before the command or after it, same meaning. A subcommand's flag has no default of its
    own (SUPPRESS), so it sets ``verbose`` when given and never resets what the top-level flag set."""
    parser.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        default=False if top else argparse.SUPPRESS,
        help="show structured logs (our structlog events) on stderr",
    )


def _add_format(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--format", choices=("text", "json"), default="text", help=f"{what} (default text)")


_BOUNDS = {
    "admin": "each request (connecting included)",
    "consume": "connecting and looking up the topic (or the pattern's topics), and the final commit with --group",
    "share": "connecting and looking up the topic, and the final commit of the acknowledgements",
}


def _add_common(parser: argparse.ArgumentParser, *, admin: bool, share: bool = False) -> None:
    parser.add_argument("--bootstrap-server", required=True, help="HOST:PORT[,HOST:PORT...]")
    bounds = _BOUNDS["admin" if admin else "share" if share else "consume"]
    parser.add_argument(
        "--timeout-ms",
        type=int,
        default=DEFAULT_TIMEOUT_MS,
        metavar="MS",
        help=f"give up when the brokers do not answer within this many milliseconds; bounds {bounds} "
        f"(default {DEFAULT_TIMEOUT_MS}: {seconds(DEFAULT_TIMEOUT_MS)})",
    )
    parser.add_argument(
        "--property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="any consumer setting, Java or Python spelling (e.g. session.timeout.ms=6000, security.protocol=SSL, "
        "ssl.cafile=ca.pem); repeatable. Admin commands use only the security settings",
    )
    _add_verbose(parser)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="asyncconsumer", description="An asyncio-first Kafka consumer.")
    _add_verbose(parser, top=True)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", help="what to do")
    demo = sub.add_parser("demo", help="start an embedded Tansu broker, produce, consume, report speed")
    demo.add_argument("--records", type=int, default=200_000, help="how many records to produce (default 200000)")
    demo.add_argument("--size", type=int, default=100, help="value size in bytes (default 100)")
    demo.add_argument("--partitions", type=int, default=4, help="partitions of the topic 'demo' (default 4)")
    _add_verbose(demo)

    broker = sub.add_parser("broker", help="run the embedded Tansu broker in the foreground (Ctrl-C stops it)")
    broker.add_argument("--port", type=int, default=None, help="listen on 127.0.0.1:PORT (default: a free port)")
    broker.add_argument("--topic", default=None, help="create this topic")
    broker.add_argument("--partitions", type=int, default=1, help="partitions of --topic (default 1)")
    broker.add_argument(
        "--records",
        type=int,
        default=0,
        help="produce this many records to --topic: 'record N' with key N, to partition N modulo --partitions",
    )
    _add_verbose(broker)

    consume = sub.add_parser("consume", help="print records from a topic (Ctrl-C stops, commits, exits 130)")
    _add_common(consume, admin=False)
    source = consume.add_mutually_exclusive_group(required=True)
    source.add_argument("--topic", help="every partition of this topic")
    source.add_argument("--pattern", help="every topic whose whole name matches this regular expression")
    consume.add_argument(
        "--from-beginning",
        action="store_true",
        help="where no offset is committed, start at the earliest offset (default: at the end)",
    )
    consume.add_argument("--group", default=None, help="consume as a member of this consumer group (commits on exit)")
    consume.add_argument("--max-messages", type=int, default=None, help="stop after printing this many records")
    _add_format(consume, "text: topic-partition@offset, key and value, tab-separated; json: one object a line")
    consume.add_argument("--key-format", choices=FORMATS, default="utf8", help="how keys are shown (default utf8)")
    consume.add_argument("--value-format", choices=FORMATS, default="utf8", help="how values are shown (default utf8)")
    consume.add_argument("--decode", choices=("utf-8", "hex"), default=None, help=argparse.SUPPRESS)  # old spelling

    share = sub.add_parser(
        "share-consume",
        help="print records as a member of a share group, acknowledging each (Ctrl-C stops, commits, exits 130)",
    )
    _add_common(share, admin=False, share=True)
    share.add_argument(
        "--group",
        required=True,
        help="the share group's id (where it starts: its config "
        "share.auto.offset.reset, set on the broker; default latest)",
    )
    share.add_argument("--topic", required=True, help="the topic to read with the group")
    share.add_argument(
        "--ack",
        choices=ACKS,
        default="accept",
        help="how each printed record is acknowledged: accept (done), release (delivered again, to any member, "
        "its delivery count raised) or reject (never delivered again); default accept",
    )
    share.add_argument("--max-messages", type=int, default=None, help="stop after printing this many records")
    _add_format(
        share, "text: topic-partition@offset (delivery N), key and value, tab-separated; json: one object a line"
    )
    share.add_argument("--key-format", choices=FORMATS, default="utf8", help="how keys are shown (default utf8)")
    share.add_argument("--value-format", choices=FORMATS, default="utf8", help="how values are shown (default utf8)")

    offsets = sub.add_parser("offsets", help="beginning and end offset of every partition of a topic")
    offsets.add_argument("topic", help="the topic")
    _add_common(offsets, admin=True)
    _add_format(offsets, "text: a table; json: one array")

    groups = sub.add_parser("groups", help="consumer groups")
    groups_sub = groups.add_subparsers(dest="groups_command", required=True, metavar="COMMAND", help="what to do")
    _add_verbose(groups)
    describe = groups_sub.add_parser(
        "describe", help="as kafka-consumer-groups.sh --describe: offsets, log-end offsets, lag and members"
    )
    describe.add_argument("group", help="the consumer group's id (classic or KIP-848)")
    shown = describe.add_mutually_exclusive_group()
    shown.add_argument("--offsets", action="store_true", help="each partition's offsets, lag and member (the default)")
    shown.add_argument("--members", action="store_true", help="each member and how many partitions it has")
    shown.add_argument("--state", action="store_true", help="the group's coordinator, assignor, state and size")
    _add_common(describe, admin=True)
    _add_format(describe, "text: Kafka's tables; json: one object with all of it")
    listing = groups_sub.add_parser("list", help="every group on the cluster: id, type, state")
    listing.add_argument(
        "--type", action="append", default=[], help="only groups of this type (classic, consumer, share); repeatable"
    )
    listing.add_argument("--state", action="append", default=[], help="only groups in this state (Stable, Empty...)")
    _add_common(listing, admin=True)
    _add_format(listing, "text: a table; json: one array")
    reset = groups_sub.add_parser(
        "reset-offsets",
        help="move a group's committed offsets (shows the plan; --execute writes it), refused while it has members",
    )
    reset.add_argument("group", help="the consumer group's id")
    scope = reset.add_mutually_exclusive_group()
    scope.add_argument("--all-topics", action="store_true", help="every partition the group has an offset for")
    scope.add_argument(
        "--topic", action="append", default=[], metavar="TOPIC[:P,P]", help="a topic, or some of its partitions"
    )
    to = reset.add_mutually_exclusive_group(required=True)
    to.add_argument("--to-earliest", action="store_true", help="the start of each partition's log")
    to.add_argument("--to-latest", action="store_true", help="the end of each partition's log")
    to.add_argument("--to-current", action="store_true", help="the committed offsets (the log end where none)")
    to.add_argument("--to-offset", type=int, metavar="N", help="offset N (moved into the log's range)")
    to.add_argument("--shift-by", type=int, metavar="N", help="the committed offset plus N (N may be negative)")
    to.add_argument("--to-datetime", metavar="YYYY-MM-DDTHH:mm:SS.sss", help="the first record at or after this time")
    to.add_argument("--by-duration", metavar="PnDTnHnMnS", help="the first record at most this long ago")
    mode = reset.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="show the plan, change nothing (the default)")
    mode.add_argument("--execute", action="store_true", help="write the new offsets")
    _add_common(reset, admin=True)
    _add_format(reset, "text: a table; json: one object")
    delete = groups_sub.add_parser("delete", help="delete groups and their offsets (refused while one has members)")
    delete.add_argument("group", nargs="+", help="the groups' ids")
    _add_common(delete, admin=True)
    _add_format(delete, "text: one line; json: one object")
    delete_offsets = groups_sub.add_parser("delete-offsets", help="delete a group's committed offsets of topics")
    delete_offsets.add_argument("group", help="the consumer group's id")
    delete_offsets.add_argument(
        "--topic", action="append", required=True, metavar="TOPIC[:P,P]", help="a topic, or some of its partitions"
    )
    _add_common(delete_offsets, admin=True)
    _add_format(delete_offsets, "text: a table; json: one array")

    topics = sub.add_parser("topics", help="topics")
    topics_sub = topics.add_subparsers(dest="topics_command", required=True, metavar="COMMAND", help="what to do")
    _add_verbose(topics)
    topics_list = topics_sub.add_parser("list", help="every topic's name")
    topics_list.add_argument("--include-internal", action="store_true", help="__consumer_offsets and the like too")
    _add_common(topics_list, admin=True)
    _add_format(topics_list, "text: one name a line; json: one array")
    topics_describe = topics_sub.add_parser("describe", help="partitions, leaders, replicas and in-sync replicas")
    topics_describe.add_argument("topic", nargs="+", help="the topics")
    _add_common(topics_describe, admin=True)
    _add_format(topics_describe, "text: as kafka-topics.sh --describe; json: one array")
    topics_create = topics_sub.add_parser("create", help="create a topic")
    topics_create.add_argument("topic", help="the topic's name")
    topics_create.add_argument("--partitions", type=int, default=-1, help="(default: the broker's num.partitions)")
    topics_create.add_argument(
        "--replication-factor", type=int, default=-1, help="(default: the broker's default.replication.factor)"
    )
    topics_create.add_argument(
        "--config", action="append", default=[], metavar="KEY=VALUE", help="a topic config; repeatable"
    )
    _add_common(topics_create, admin=True)
    topics_delete = topics_sub.add_parser("delete", help="delete topics")
    topics_delete.add_argument("topic", nargs="+", help="the topics")
    _add_common(topics_delete, admin=True)

    share_groups = sub.add_parser("share-groups", help="share groups (KIP-932)")
    share_groups_sub = share_groups.add_subparsers(
        dest="share_groups_command", required=True, metavar="COMMAND", help="what to do"
    )
    _add_verbose(share_groups)
    share_describe = share_groups_sub.add_parser(
        "describe", help="state, members and their partitions, and each partition's start offset and lag"
    )
    share_describe.add_argument("group", help="the share group's id")
    _add_common(share_describe, admin=True)
    _add_format(share_describe, "text: a summary line and tables; json: one object")
    configure = share_groups_sub.add_parser(
        "configure",
        help="set or delete the share group's configs on the broker (share.auto.offset.reset, "
        "share.record.lock.duration.ms...); the group need not exist yet",
    )
    configure.add_argument("group", help="the share group's id")
    _add_common(configure, admin=True)
    configure.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set a group config, e.g. share.auto.offset.reset=earliest (where a new group starts), "
        "share.record.lock.duration.ms=60000, share.delivery.count.limit=10; repeatable",
    )
    configure.add_argument(
        "--delete",
        action="append",
        default=[],
        metavar="KEY",
        help="delete a group config, so the broker's default applies again; repeatable",
    )
    return parser


def _configure_logging(verbose: bool) -> None:
    ours = logging.getLogger("asyncconsumer")
    if verbose:
        # Our events only: the root logger stays as it is, so asyncio's and other libraries' debug lines stay out.
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        ours.addHandler(handler)
        ours.setLevel(logging.DEBUG)
    else:
        # Quiet: not even warnings (Python's last-resort handler would print them).
        ours.addHandler(logging.NullHandler())
    ours.propagate = False


def _run(args: argparse.Namespace) -> int:
    if args.command == "broker":
        return run_broker(args)
    if args.command == "demo":
        return asyncio.run(run_demo(args))
    if args.command == "offsets":
        return asyncio.run(run_offsets(args))
    if args.command == "groups":
        runs = {
            "describe": run_groups_describe,
            "list": run_groups_list,
            "reset-offsets": run_groups_reset_offsets,
            "delete": run_groups_delete,
            "delete-offsets": run_groups_delete_offsets,
        }
        return asyncio.run(runs[args.groups_command](args))
    if args.command == "topics":
        topic_runs = {
            "list": run_topics_list,
            "describe": run_topics_describe,
            "create": run_topics_create,
            "delete": run_topics_delete,
        }
        return asyncio.run(topic_runs[args.topics_command](args))
    if args.command == "share-groups" and args.share_groups_command == "configure":
        return asyncio.run(run_share_groups_configure(args))
    if args.command == "share-groups":
        return asyncio.run(run_share_groups_describe(args))
    if args.command == "share-consume":
        return asyncio.run(run_share_consume(args))
    if args.decode is not None:
        args.key_format = args.value_format = "hex" if args.decode == "hex" else "utf8"
    return asyncio.run(run_consume(args))


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    _configure_logging(args.verbose)
    try:
        return _run(args)
    except UsageError as exc:
        err(f"error: {exc}")
        return EXIT_NOT_FOUND
    except (TopicNotFoundError, GroupNotFoundError, GroupIdNotFoundError, UnknownTopicOrPartitionError) as exc:
        err(f"error: {exc}")
        return EXIT_NOT_FOUND
    except KafkaError as exc:
        err(f"error: {type(exc).__name__}: {exc}")
        return EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
