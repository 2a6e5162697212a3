"""Optimal assignment of expected calls to actual calls, for `trajectory_grader`.

Greedy matching (each expectation takes the first call that fits) fails two calls of one tool
with swapped arguments when the first expectation is loose: it takes the call the second one
needed. So:

- `unordered`, `superset`, `subset`: a maximum bipartite matching (Hopcroft-Karp,
  O(E·√V)) between expected calls and the calls that fit them. Its size does not depend on the
  order expectations are listed in, so neither does the verdict.
- `strict`, `subsequence`: an order-preserving alignment, the longest common subsequence under
  "this call fits this expectation" (dynamic programming, O(n·m)). The calls one model message
  requested together (parallel calls) have no order among themselves: `align_in_groups` keeps
  the order between messages and matches the expectations given to one message in any order.

All take `edges[i]`: the indexes of the actual calls expected call i accepts, ascending.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

__all__ = ["align_in_groups", "align_in_order", "max_matching"]

_FREE = -1


def max_matching(edges: Sequence[Sequence[int]], n_actual: int) -> list[int | None]:
    """A maximum matching: for each expected call, the actual call it is assigned, or None."""
    n_expected = len(edges)
    match_left = [_FREE] * n_expected
    match_right = [_FREE] * n_actual
    # A cheap greedy pass first: most of an ordinary record matches here, and Hopcroft-Karp
    # only has to augment what is left.
    for i, adjacent in enumerate(edges):
        for j in adjacent:
            if match_right[j] == _FREE:
                match_left[i], match_right[j] = j, i
                break
    infinity = n_expected + n_actual + 1
    while True:
        # BFS from every free expected call: layer distances along alternating paths.
        dist = [infinity] * n_expected
        queue: deque[int] = deque()
        for i in range(n_expected):
            if match_left[i] == _FREE:
                dist[i] = 0
                queue.append(i)
        found = False
        while queue:
            i = queue.popleft()
            for j in edges[i]:
                k = match_right[j]
                if k == _FREE:
                    found = True
                elif dist[k] == infinity:
                    dist[k] = dist[i] + 1
                    queue.append(k)
        if not found:
            break
        # DFS along the layers: vertex-disjoint shortest augmenting paths (iterative, so a long
        # record cannot exhaust the recursion limit).
        for start in range(n_expected):
            if match_left[start] == _FREE:
                _augment(start, edges, match_left, match_right, dist, infinity)
    return [j if j != _FREE else None for j in match_left]


def _augment(
    start: int,
    edges: Sequence[Sequence[int]],
    match_left: list[int],
    match_right: list[int],
    dist: list[int],
    infinity: int,
) -> bool:
    stack = [(start, 0)]
    path: list[tuple[int, int]] = []  # (expected i, actual j) tentatively taken
    while stack:
        i, position = stack.pop()
        adjacent = edges[i]
        while position < len(adjacent):
            j = adjacent[position]
            position += 1
            k = match_right[j]
            if k == _FREE:
                path.append((i, j))
                for left, right in path:
                    match_left[left], match_right[right] = right, left
                return True
            if dist[k] == dist[i] + 1:
                stack.append((i, position))
                path.append((i, j))
                stack.append((k, 0))
                break
        else:
            dist[i] = infinity  # a dead end: never try it again in this phase
            if path:
                path.pop()
    return False


def align_in_order(edges: Sequence[Sequence[int]], n_actual: int) -> list[int | None]:
    """An order-preserving alignment with the most expected calls aligned: for each expected
    call, its actual call or None; aligned actual indexes increase with the expected index.
    Ties go to the earliest actual calls, so a reason names the first call that fits."""
    n_expected = len(edges)
    fits = [set(adjacent) for adjacent in edges]
    # best[i][j]: most expectations among i.. aligned with actual calls among j..
    best = [[0] * (n_actual + 1) for _ in range(n_expected + 1)]
    for i in range(n_expected - 1, -1, -1):
        row, below = best[i], best[i + 1]
        fit = fits[i]
        for j in range(n_actual - 1, -1, -1):
            take = below[j + 1] + 1 if j in fit else 0
            row[j] = max(take, below[j], row[j + 1])
    out: list[int | None] = [None] * n_expected
    i = j = 0
    while i < n_expected and j < n_actual:
        if j in fits[i] and best[i][j] == best[i + 1][j + 1] + 1:
            out[i] = j
            i += 1
            j += 1
        elif best[i][j] == best[i][j + 1]:
            j += 1
        else:
            i += 1
    return out


def align_in_groups(edges: Sequence[Sequence[int]], group_of: Sequence[int]) -> list[int | None]:
    """`align_in_order` where the actual calls come in groups (`group_of[j]`, non-decreasing:
    the model message that requested call j): the groups keep their order, and the expected
    calls aligned with one group may take its calls in any order. The most expected calls
    aligned; with every group a single call, exactly `align_in_order`.

    Dynamic programming over (expected position, group): a group takes a run of the expected
    calls that follow (a maximum matching between them and its calls, grown one expected call
    at a time), or none. Groups no expected call fits are left out first, so a long record with
    few parallel calls costs little more than the plain alignment."""
    n_actual = len(group_of)
    if len(set(group_of)) == n_actual:
        return align_in_order(edges, n_actual)
    fitting = {j for adjacent in edges for j in adjacent}
    groups: list[list[int]] = []
    for j in range(n_actual):
        if j and group_of[j] == group_of[j - 1]:
            groups[-1].append(j)
        else:
            groups.append([j])
    groups = [g for g in groups if any(j in fitting for j in g)]
    n, k = len(edges), len(groups)
    # best[i][g]: which of the expected calls i.. are aligned with groups g.. (True/False
    # each), compared as (how many, then the earliest ones first): the same preference as
    # `align_in_order`, so a reason names the same unmet call. pick: how it was reached.
    best: list[list[tuple[int, tuple[bool, ...]]]] = [
        [(0, (False,) * (n - i))] * (k + 1) for i in range(n + 1)
    ]
    pick: list[list[tuple[int, dict[int, int]] | None]] = [[None] * (k + 1) for _ in range(n + 1)]
    for g in range(k - 1, -1, -1):
        members = set(groups[g])
        local = [[j for j in adjacent if j in members] for adjacent in edges]
        for i in range(n - 1, -1, -1):
            top, how = best[i][g + 1], None  # the group takes nothing
            # the group takes the run i..end: a maximum matching grown one expected call at a
            # time (a matched call stays matched: the earliest expected calls are kept)
            left: dict[int, int] = {}
            right: dict[int, int] = {}
            for end in range(i, n):
                if local[end]:
                    _kuhn(end, local, left, right, set())
                if not left:
                    continue
                rest_count, rest_flags = best[end + 1][g + 1]
                flags = tuple(e in left for e in range(i, end + 1)) + rest_flags
                candidate = (len(left) + rest_count, flags)
                if candidate >= top:  # equal: taking this group uses the earlier calls
                    top, how = candidate, (end + 1, dict(left))
            best[i][g], pick[i][g] = top, how
    out: list[int | None] = [None] * n
    i = g = 0
    while i < n and g < k:
        how = pick[i][g]
        if how is not None:
            i, taken = how
            for expected, actual in taken.items():
                out[expected] = actual
        g += 1
    return out


def _kuhn(
    i: int,
    edges: Sequence[Sequence[int]],
    left: dict[int, int],
    right: dict[int, int],
    seen: set[int],
) -> bool:
    """One augmenting path from expected call i (Kuhn's algorithm): its depth is bounded by the
    expected calls of one run, a handful."""
    for j in edges[i]:
        if j in seen:
            continue
        seen.add(j)
        holder = right.get(j)
        if holder is None or _kuhn(holder, edges, left, right, seen):
            left[i], right[j] = j, i
            return True
    return False
