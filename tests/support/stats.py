"""A statistics layout for the tests that judge one class by hand: a privacy model asks its
layout for a column's value counts and moments, and :class:`OneColumn` hands it the class
statistics' only ones."""

from __future__ import annotations


class OneColumn:
    """The layout of :class:`~sqlanon.model.stats.ClassStats` holding one sensitive column."""

    def counts(self, stats, column):
        return stats.counts[0]

    def moments(self, stats, column):
        return stats.moments[0]
