"""Rothko-S's hypothesis tests: may a split chosen on a sample be made optimistically?

LeFevre & DeWitt, Scalable Anonymization Algorithms for Large Data Sets (TR 1590), Section 3.1.
The growth phase of Rothko-S (:mod:`sqlanon.mondrian.sample`) sees a simple random sample ``r``
of ``n`` rows drawn without replacement from a population partition ``R`` of ``N`` rows. For a
candidate split into ``m`` children, the null hypothesis for each child ``R_i`` is "``R_i`` breaks
the requirement"; the split is made when every child's test rejects it at level ``alpha / m``
(Bonferroni: the chance that *any* child is accepted wrongly is at most ``alpha``). A split made
in error is undone later (pruning), so the tests only steer how often that happens; they never
decide what is published.

Each privacy model carries its own test (:meth:`~sqlanon.model.privacy.PrivacyModel.sample_test`,
with the model: k-anonymity TR 3.1.1, recursive (c, l)-diversity TR 3.1.2, variance diversity TR
3.1.3, entropy l-diversity by the delta method, beta-likeness value by value; distinct
l-diversity and t-closeness judge the sample as it is). Each test is a
:class:`~sqlanon.model.privacy.Constraint` judging *sample* statistics, so the one split decision
(:func:`sqlanon.mondrian.split.evaluate`) runs unchanged on the sample: :func:`sample_constraints`
turns the requirement into its tests. With ``n == N`` (the sample is the whole partition) every
test is the model itself, exactly. A model without a sound test (``sample_testable`` False:
delta-disclosure) needs the exact path: :func:`exact_only` names it, and the request refuses
``strategy="sample"`` and resolves ``"auto"`` to ``"levels"`` before any work.

Fitting the budget (not a requirement: when growth stops, :mod:`sqlanon.mondrian.sample`): H0
``p = p0 = M / N`` for the sample budget ``M``, rejected towards ``p < p0`` when
``(p0 - p^) / sqrt(p0 (1 - p0) / n * (N - n) / (N - 1)) >= z_alpha`` (:func:`fit_threshold`; one
test per partition, no correction: an error costs only another round for that partition).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from ..model.privacy import Constraint, PrivacyModel
from ..model.privacy.sampling import z_upper


def fit_threshold(limit: int, population: int, sample: int, alpha: float) -> int:
    """The most sample rows ``n_i`` at which a sample partition's population ``R_i`` fits
    ``limit`` rows with confidence ``1 - alpha``: H0 ``p = p0 = limit / N`` (``R_i`` is larger), and
    ``n_i`` rejects it when ``p0 - n_i / n >= z_alpha sqrt(p0 (1 - p0) / n (N - n) / (N - 1))`` --
    :func:`k_threshold`'s test with the other tail. ``limit`` itself when ``n == N``; -1 when no
    sample partition proves it (``limit`` is too small a share of ``N`` for this sample)."""
    N, n = population, sample
    if n >= N:
        return limit
    p0 = min(limit / N, 1.0)
    sd = math.sqrt(p0 * (1 - p0) / n * (N - n) / (N - 1))
    out = math.floor(n * (p0 - z_upper(alpha) * sd))
    while out >= 0 and p0 - out / n < z_upper(alpha) * sd:  # floor's rounding, checked
        out -= 1
    return max(out, -1)


def exact_only(models: Iterable[PrivacyModel]) -> list[str]:
    """The ``describe()`` texts of the models Rothko-S cannot judge on a sample."""
    return [c.describe() for c in models if not c.sample_testable]


def sample_constraints(constraints: Sequence[PrivacyModel], population: int, sample: int, confidence: float,
                       fanout: int) -> tuple[Constraint, ...]:
    """The tests judging splits of a ``sample``-row sample of a ``population``-row partition in
    place of ``constraints``, each at level ``(1 - confidence) / fanout`` (Bonferroni over the
    most children a split can make). The constraints themselves when the sample is the whole
    partition."""
    if sample >= population:
        return tuple(constraints)
    alpha = (1.0 - confidence) / fanout
    return tuple(c.sample_test(population, sample, alpha) for c in constraints)
