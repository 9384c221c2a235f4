"""A course kernel's first figure does not pay for jsonschema's optional IRI checker (rocmlab.course)."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("rfc3987_syntax")

PROBE = ("import sys, time\n{first}t = time.perf_counter()\nimport plotly.io._renderers\n"
         "print(sys.modules.get('rfc3987_syntax') is not None, round(time.perf_counter() - t, 3))\n")


def _probe(first: str) -> tuple[bool, str]:
    out = subprocess.run([sys.executable, "-c", PROBE.format(first=first)], capture_output=True, text=True,
                         timeout=120, check=True).stdout.split()
    return out[0] == "True", out[1]


def test_a_course_kernel_leaves_the_iri_grammar_out():
    loaded, took = _probe("import rocmlab.course\n")
    assert not loaded, f"rfc3987_syntax was imported ({took} s)"


def test_control_without_the_course_package_it_is_imported():
    loaded, took = _probe("")
    assert loaded, "jsonschema no longer imports rfc3987_syntax: rocmlab.course.SKIPPED_IMPORTS can go"
