"""Which Python the source's workers run, the check of that interpreter, and the registration that carries it
(against a stand-in session: the real one is in tests/integration/test_spark.py)."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.extras import requires_extra

requires_extra("spark", "pyspark")  # first: asyncconsumer.spark imports pyspark

from pyspark.errors import AnalysisException

from asyncconsumer.errors import ConfigError
from asyncconsumer.spark import KafkaDataSource, WorkerPythonError, register
from asyncconsumer.spark.workers import WorkerPython, check, choose, is_local

DRIVER = "/venv/bin/python"


def chosen(master: str = "local[2]", environ: dict[str, str] | None = None, configured: str | None = None) -> Any:
    return choose(master=master, environ=environ or {}, configured=configured, driver=DRIVER, default="python3")


@pytest.mark.parametrize("master", ["local", "local[2]", "local[*]", "local[2,3]", "local-cluster[2,1,1024]"])
def test_every_local_master_is_local(master: str) -> None:
    assert is_local(master)


@pytest.mark.parametrize("master", ["spark://h:7077", "yarn", "k8s://https://h:6443", "localhost", "sc://h"])
def test_cluster_masters_are_not(master: str) -> None:
    assert not is_local(master)


def test_a_local_master_with_nothing_set_runs_the_drivers_interpreter() -> None:
    assert chosen() == WorkerPython(DRIVER, "driver")


def test_pyspark_python_is_never_overridden_even_by_the_conf() -> None:
    # PySpark already runs it: the registration keeps its value (``default``, which PySpark read from it).
    environ = {"PYSPARK_PYTHON": "/opt/py/bin/python"}
    assert chosen(environ=environ, configured="/other/python") == WorkerPython("python3", "PYSPARK_PYTHON")
    assert chosen("yarn", environ=environ) == WorkerPython("python3", "PYSPARK_PYTHON")


def test_the_conf_is_taken_when_the_environment_says_nothing_local_or_not() -> None:
    assert chosen(configured="/opt/py/bin/python") == WorkerPython("/opt/py/bin/python", "spark.pyspark.python")
    assert chosen("yarn", configured="/opt/py/bin/python").chosen_by == "spark.pyspark.python"


def test_a_cluster_with_nothing_set_keeps_pysparks_default() -> None:
    assert chosen("spark://h:7077") == WorkerPython("python3", "default")


def test_the_check_passes_for_an_interpreter_that_imports_asyncconsumer() -> None:
    check(WorkerPython(sys.executable, "PYSPARK_PYTHON"), pythonpath=os.environ.get("PYTHONPATH", ""), where="x")


def _interpreter(tmp_path: Path, script: str) -> str:
    path = tmp_path / "python3"
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_an_interpreter_without_asyncconsumer_is_named_with_what_to_do(tmp_path: Path) -> None:
    python = _interpreter(tmp_path, "echo \"ModuleNotFoundError: No module named 'asyncconsumer'\" >&2; exit 1")
    with pytest.raises(WorkerPythonError) as caught:
        check(WorkerPython(python, "PYSPARK_PYTHON"), pythonpath="", where="planner and readers")
    message = str(caught.value)
    assert isinstance(caught.value, ConfigError) and caught.value.key == "PYSPARK_PYTHON"
    assert f"planner and readers with {python!r} (from PYSPARK_PYTHON)" in message
    assert "No module named 'asyncconsumer'" in message
    assert "Install asyncconsumer[spark] into it" in message and repr(sys.executable) in message


def test_a_missing_interpreter_does_not_run(tmp_path: Path) -> None:
    python = str(tmp_path / "nowhere" / "python3")
    with pytest.raises(WorkerPythonError, match="does not run"):
        check(WorkerPython(python, "spark.pyspark.python"), pythonpath="", where="planner")


def test_pysparks_default_on_a_cluster_is_told_to_set_pyspark_python(tmp_path: Path) -> None:
    python = _interpreter(tmp_path, "exit 1")
    with pytest.raises(WorkerPythonError) as caught:
        check(WorkerPython(python, "default"), pythonpath="", where="planner (on this driver)")
    assert caught.value.key == "PYSPARK_PYTHON"
    assert "PySpark's default, from PATH" in str(caught.value) and "exit code 1" in str(caught.value)
    assert "at the same path on the driver and on every executor" in str(caught.value)


class Conf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, key: str) -> str | None:
        return self.values.get(key)


class PythonUtils:
    @staticmethod
    def sparkPythonPath() -> str:
        return ""


class Jvm:
    PythonUtils = PythonUtils


class Context:
    def __init__(self, master: str, conf: dict[str, str]) -> None:
        self.master = master
        self.pythonExec = "python3"  # PySpark's default without PYSPARK_PYTHON
        self._conf = Conf(conf)
        self._jvm = Jvm()

    def getConf(self) -> Conf:
        return self._conf


class Registration:
    """``spark.dataSource``: records the interpreter each registration's function would carry."""

    def __init__(self, sc: Context | None, refuse: str | None = None) -> None:
        self.sc = sc
        self.refuse = refuse
        self.registered: list[tuple[type, str | None]] = []

    def register(self, source: type) -> None:
        if self.refuse is not None:
            raise Refused(self.refuse)
        self.registered.append((source, self.sc.pythonExec if self.sc else None))


class Refused(AnalysisException):
    def __init__(self, condition: str) -> None:
        super().__init__(message=condition)
        self.condition = condition

    def getCondition(self) -> str:
        return self.condition


class Session:
    def __init__(self, master: str = "local[2]", conf: dict[str, str] | None = None, refuse: str | None = None):
        self._sc = Context(master, conf or {})
        self.dataSource = Registration(self._sc, refuse)


@pytest.fixture
def no_pyspark_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)


@pytest.mark.usefixtures("no_pyspark_python")
def test_register_gives_the_source_alone_the_drivers_interpreter_on_a_local_master() -> None:
    spark = Session()
    register(spark)
    assert spark.dataSource.registered == [(KafkaDataSource, sys.executable)]
    assert spark._sc.pythonExec == "python3"  # the session's other Python functions keep PySpark's choice


@pytest.mark.usefixtures("no_pyspark_python")
def test_register_checks_a_configured_interpreter_before_registering(tmp_path: Path) -> None:
    spark = Session(conf={"spark.pyspark.python": _interpreter(tmp_path, "exit 1")})
    with pytest.raises(WorkerPythonError, match=r"^spark\.pyspark\.python: .*planner and readers"):
        register(spark)
    assert spark.dataSource.registered == []


@pytest.mark.usefixtures("no_pyspark_python")
def test_register_keeps_pysparks_default_on_a_cluster_checking_it_for_the_planner(tmp_path: Path) -> None:
    spark = Session("spark://h:7077")
    spark._sc.pythonExec = _interpreter(tmp_path, "exit 0")  # a python3 that imports everything
    register(spark)
    assert spark.dataSource.registered == [(KafkaDataSource, spark._sc.pythonExec)]


def test_register_keeps_an_explicit_pyspark_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    spark = Session()
    spark._sc.pythonExec = sys.executable  # as PySpark read it
    register(spark)
    assert spark.dataSource.registered == [(KafkaDataSource, sys.executable)]


def test_a_spark_connect_session_just_registers() -> None:
    class Remote:
        dataSource = Registration(None)

    register(Remote())
    assert Remote.dataSource.registered == [(KafkaDataSource, None)]


@pytest.mark.usefixtures("no_pyspark_python")
def test_a_source_sparks_lookup_found_first_is_kept_and_other_refusals_raise() -> None:
    register(Session(refuse="DATA_SOURCE_ALREADY_EXISTS"))
    with pytest.raises(Refused):
        register(Session(refuse="SOMETHING_ELSE"))
