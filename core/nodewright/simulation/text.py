"""The report as text on the terminal (what ``simulate`` prints after its log): the nodes, the
pending pods, the removed nodes and disruption's decisions, the run's totals, and the what-if
of a snapshot. :mod:`nodewright.simulation.html` renders the same report as a web page."""

from __future__ import annotations

from collections.abc import Sequence

from nodewright.api.excerpt import cut, printable
from nodewright.simulation.report import Report
from nodewright.simulation.savings import NEGLIGIBLE
from nodewright.simulation.whatif import WhatIf


def print_report(report: Report) -> None:
    print()
    header = ("NODE", "NODEPOOL", "INSTANCE TYPE", "ZONE", "CAPACITY", "$/H", "PODS")
    rows = [
        (
            n.name,
            n.node_pool or "-",
            n.instance_type or "-",
            n.zone or "-",
            n.capacity_type or "-",
            money(n.price_per_hour, n.price_modelled),
            str(len(n.pods)),
        )
        for n in report.nodes
    ]
    print_table(header, rows)
    bound = sum(1 for p in report.pods if p.node)
    unpriced = sum(1 for n in report.nodes if n.price_per_hour is None)
    left_out = f" ({unpriced} not priced, left out)" if unpriced else ""
    print(
        f"\n{len(report.nodes)} node(s), "
        f"{_dollars(report.total_price_per_hour, report.total_price_modelled)}{left_out}, "
        f"{bound} pod(s) bound, {len(report.pending)} pending"
    )
    if report.pending:
        print()
        print_table(
            ("PENDING POD", "REASON"),
            [(f"{p.namespace}/{p.name}", p.reason or "-") for p in report.pending],
        )
    _print_removed_nodes(report)
    _print_disruption_decisions(report)
    print(
        f"\nThe run: {_took(report.simulated_seconds)} simulated, "
        f"${report.dollar_hours:.4f} spent on nodes"
    )
    for note in report.notes:
        print(f"note: {printable(cut(note))}")


#: Events that say what disruption decided, or why it did not act.
DISRUPTION_EVENTS = frozenset(
    {
        "Unconsolidatable",
        "DisruptionBlocked",
        "ConsolidationRejected",
        "ConsolidationCandidate",
        "ConsolidationApproved",
        "DisruptionLaunching",
        "DisruptionWaitingReadiness",
        "DisruptionTerminating",
        "NodeRepairBlocked",
    }
)


def _print_removed_nodes(report: Report) -> None:
    if not report.removed_nodes:
        return
    print()
    rows = []
    for r in report.removed_nodes:
        ran = (
            "existing"  # it ran before the snapshot: how long is not known
            if r.existing
            else _took((r.removed_at - r.launched_at).total_seconds())
            if r.removed_at is not None and r.launched_at is not None
            else "-"
        )
        why = r.disruption_reason or "deleted"
        if r.disruption:
            why += f" ({r.disruption})"
        rows.append(
            (
                r.name,
                r.node_pool or "-",
                r.instance_type or "-",
                r.capacity_type or "-",
                f"{r.price_per_hour:.4f}" if r.price_per_hour is not None else "-",
                ran,
                why,
            )
        )
    print_table(
        ("REMOVED NODE", "NODEPOOL", "INSTANCE TYPE", "CAPACITY", "$/H", "RAN", "WHY"), rows
    )


def _print_disruption_decisions(report: Report) -> None:
    decisions = []
    seen = set()
    for event in report.events:
        # A NodeClaim's event repeats its Node's, at the same moment, in the same words.
        message = event["message"].replace("Disrupting NodeClaim:", "Disrupting Node:")
        said = (event.get("time"), event["reason"], message)
        if event["reason"] in DISRUPTION_EVENTS and said not in seen:
            seen.add(said)
            decisions.append(event)
    if not decisions:
        return
    print()
    print_table(
        ("DISRUPTION", "OBJECT", "REASON", "MESSAGE"),
        [
            (
                _clock_time(e.get("time")),
                e["object"],
                e["reason"],
                printable(cut(e["message"])) + (f" (x{e['count']})" if e["count"] != "1" else ""),
            )
            for e in decisions
        ],
    )


def _clock_time(stamp: str | None) -> str:
    """``00:03:16`` of a report time stamp."""
    return stamp[11:19] if stamp else "-"


def _took(seconds: float) -> str:
    """``2m15s``, ``1h0m5s``, ``45s``: a duration as Karpenter's logs write it."""
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"


def print_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Columns padded to their widest cell, as ``kubectl get`` prints them."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(str(cell).ljust(widths[i]) for i, cell in enumerate(row)).rstrip())


#: How the what-if marks a figure resting on a modelled price, and what the mark means.
MODELLED_MARK = "*"
MODELLED_NOTE = "* rests on a modelled price: the provider's estimate, not a quote"


def print_what_if(what_if: WhatIf) -> None:
    """What the snapshot's nodes cost now, what nodewright would change, what it would cost,
    where the saving comes from, and which new node replaces which."""
    current, projected = what_if.current_price_per_hour, what_if.projected_price_per_hour
    managed = sum(1 for n in what_if.current if n.managed)
    print(f"\nWhat-if for {what_if.source}:")
    print(
        f"  now:       {len(what_if.current)} node(s), "
        f"{_dollars(current, what_if.current_price_modelled)} "
        f"({managed} managed, {len(what_if.current) - managed} unmanaged)"
    )
    saved = current - projected
    modelled = what_if.current_price_modelled or what_if.projected_price_modelled
    share = f", {saved / current:.0%}" if current > 0 else ""
    change = (
        f"saves {_dollars(saved, modelled)}{share}"
        if saved >= 0
        else f"costs {_dollars(-saved, modelled)} more"
    )
    print(
        f"  projected: {len(what_if.projected)} node(s), "
        f"{_dollars(projected, what_if.projected_price_modelled)} ({change})"
    )
    lines = saving_lines(what_if)
    if lines:
        print("  where it comes from:")
        for amount, words in lines:
            print(f"    {amount:>12}  {words}")
    if what_if.unplaced:
        print(f"  {len(what_if.unplaced)} pod(s) could not be placed (PENDING POD above)")
    if what_if.unpriced:
        shown = cut(", ".join(what_if.unpriced), 200)
        print(f"  not priced (no catalog offering, left out of the totals): {shown}")
    if what_if.any_price_modelled:
        print(f"  {MODELLED_NOTE} (see the notes above)")
    if what_if.changes:
        print()
        print_table(
            (
                "EXISTING NODE",
                "NODEPOOL",
                "INSTANCE TYPE",
                "CAPACITY",
                "$/H",
                "ACTION",
                "WHY",
                "REPLACED BY",
            ),
            [
                (
                    c.node.name,
                    c.node.node_pool or "-",
                    c.node.instance_type or "-",
                    c.node.capacity_type or "-",
                    money(c.node.price_per_hour, c.node.price_modelled),
                    c.action,
                    (c.reason or "deleted") + (f" ({c.disruption})" if c.disruption else ""),
                    names(c.replaced_by),
                )
                for c in what_if.changes
            ],
        )
    if what_if.added:
        print()
        print_table(
            ("NEW NODE", "NODEPOOL", "INSTANCE TYPE", "ZONE", "CAPACITY", "$/H", "REPLACES"),
            [
                (
                    n.name,
                    n.node_pool or "-",
                    n.instance_type or "-",
                    n.zone or "-",
                    n.capacity_type or "-",
                    money(n.price_per_hour, n.price_modelled),
                    names(n.replaces) if n.replaces else "- (launched for pods)",
                )
                for n in what_if.added
            ],
        )


def saving_lines(what_if: WhatIf) -> list[tuple[str, str]]:
    """The saving's parts worth a line: (signed amount, what it is), in the run's words."""
    savings = what_if.savings
    if savings is None:
        return []
    moves = ", ".join(savings.moves) or "another capacity type"
    parts = [
        (savings.removal, f"removing {savings.removal.nodes} node(s)"),
        (
            savings.right_sizing,
            f"right-sizing {savings.right_sizing.nodes} node(s) at the same capacity type",
        ),
        (savings.capacity_type, f"moving {savings.capacity_type.nodes} node(s) from {moves}"),
        (savings.launched, f"launching {savings.launched.nodes} node(s) for pods without room"),
        (savings.other, "other (prices that changed during the run)"),
    ]
    return [
        (_dollars(figure.per_hour, figure.modelled, signed=True), words)
        for figure, words in parts
        if figure.nodes or abs(figure.per_hour) >= NEGLIGIBLE
    ]


def _dollars(amount: float, modelled: bool, *, signed: bool = False) -> str:
    """``$0.2172/h``, marked when modelled; ``-$0.1000/h`` for a signed negative amount."""
    sign = "-" if signed and amount <= -NEGLIGIBLE else ""
    return f"{sign}${abs(amount) if signed else amount:.4f}/h" + (MODELLED_MARK if modelled else "")


def money(price: float | None, modelled: bool = False) -> str:
    """A price cell: ``0.2172``, ``0.0123*`` when modelled, ``-`` when unknown."""
    if price is None:
        return "-"
    return f"{price:.4f}" + (MODELLED_MARK if modelled else "")


def names(nodes: Sequence[str], shown: int = 2) -> str:
    """``a, b +3``: the first node names and how many more; ``-`` for none."""
    if not nodes:
        return "-"
    more = f" +{len(nodes) - shown}" if len(nodes) > shown else ""
    return ", ".join(nodes[:shown]) + more
