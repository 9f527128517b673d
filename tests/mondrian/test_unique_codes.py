""":func:`sqlanon.mondrian.encode.ranked`: the codes of fetched values, counted over their
span for integers of a small span, exactly what ``np.unique`` gives (the code tables' order)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from sqlanon.mondrian.encode import ranked

INT64 = st.integers(-2**63, 2**63 - 1)


@given(base=INT64, width=st.sampled_from([1, 3, 50, 10**4, 10**6, 2**40]), data=st.data())
def test_integer_codes_are_np_unique(base, width, data):
    """Values near any base (the extremes of int64 too), spanning a few values up to far more
    than four per row: distinct values and inverse as np.unique's."""
    n = data.draw(st.integers(1, 300))
    low = max(-2**63, min(base, 2**63 - 1 - width))
    values = np.array(data.draw(st.lists(st.integers(low, low + width - 1), min_size=n, max_size=n)), dtype=np.int64)
    distinct, inverse = ranked(values)
    want, want_inverse = np.unique(values, return_inverse=True)
    assert distinct.dtype == values.dtype
    np.testing.assert_array_equal(distinct, want)
    np.testing.assert_array_equal(inverse, want_inverse.reshape(-1))
    np.testing.assert_array_equal(distinct[inverse], values)


@given(hnp.arrays(np.float64, st.integers(0, 50), elements=st.floats(allow_nan=False, allow_infinity=False)))
def test_floats_and_empty_arrays_are_np_unique(values):
    distinct, inverse = ranked(values)
    want, want_inverse = np.unique(values, return_inverse=True)
    np.testing.assert_array_equal(distinct, want)
    np.testing.assert_array_equal(inverse, want_inverse.reshape(-1))
