import os

import pytest

import kithdb

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data")


@pytest.fixture
def conn():
    db = kithdb.Database()
    c = kithdb.Connection(db)
    yield c
    c.close()
    db.close()


@pytest.fixture
def graph(conn):
    conn.execute("CREATE NODE TABLE Person(id INT64, name STRING, age INT64, PRIMARY KEY(id))")
    conn.execute("CREATE REL TABLE Knows(FROM Person TO Person, since INT64, weight DOUBLE)")
    conn.execute(f"COPY Person FROM '{DATA}/persons.csv' (HEADER=true)")
    conn.execute(f"COPY Knows FROM '{DATA}/knows.csv' (HEADER=true)")
    return conn
