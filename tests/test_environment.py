"""SQLiteEnvironment: the real state agent tools act on and state_grader reads."""

from __future__ import annotations

import threading

import pytest

from tracegrade import Environment, SQLiteEnvironment


def test_protocol_and_schema():
    env = SQLiteEnvironment(
        schema_sql="CREATE TABLE t (a INTEGER, b TEXT);INSERT INTO t VALUES (1, 'x'), (2, 'y');"
    )
    assert isinstance(env, Environment)
    assert env.query("SELECT a, b FROM t ORDER BY a") == [(1, "x"), (2, "y")]
    assert env.query("SELECT b FROM t WHERE a = ?", (2,)) == [("y",)]
    assert env.execute("UPDATE t SET b = 'z' WHERE a > ?", (0,)) == 2
    assert env.query("SELECT DISTINCT b FROM t") == [("z",)]
    env.close()
    env.close()  # idempotent


def test_key_values_round_trip_and_absent_raises_keyerror():
    with SQLiteEnvironment() as env:
        for key, value in [
            ("s", "alice"),
            ("n", 3),
            ("f", 1.5),
            ("b", False),
            ("z", None),
            ("l", [1, "a"]),
            ("d", {"k": [True]}),
        ]:
            env.write(key, value)
            assert env.read(key) == value and type(env.read(key)) is type(value)
        env.write("s", "bob")
        assert env.read("s") == "bob"
        env.delete("s")
        with pytest.raises(KeyError):
            env.read("s")
        with pytest.raises(KeyError):
            env.read("never")
        assert env.query("SELECT count(*) FROM kv") == [(6,)]


def test_file_database_persists_writes(tmp_path):
    path = str(tmp_path / "state.db")
    with SQLiteEnvironment(path, schema_sql="CREATE TABLE t (a INTEGER)") as env:
        env.execute("INSERT INTO t VALUES (7)")
        env.write("k", "v")
    with SQLiteEnvironment(path) as again:
        assert again.query("SELECT a FROM t") == [(7,)] and again.read("k") == "v"


def test_fresh_environments_never_share_state():
    a, b = SQLiteEnvironment(), SQLiteEnvironment()
    a.write("k", 1)
    with pytest.raises(KeyError):
        b.read("k")
    a.close()
    b.close()


def test_tools_on_worker_threads():
    with SQLiteEnvironment(schema_sql="CREATE TABLE t (a INTEGER)") as env:

        def work(i):
            for j in range(50):
                env.execute("INSERT INTO t VALUES (?)", (i * 100 + j,))
                env.write(f"k{i}", j)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert env.query("SELECT count(*) FROM t") == [(200,)]
        assert [env.read(f"k{i}") for i in range(4)] == [49] * 4
