"""QueryResult.get_as_networkx over node and rel values."""
import pytest

import kithdb

nx = pytest.importorskip("networkx")

# persons.csv / knows.csv (see tests/data): 6 persons, 8 Knows rels.
KNOWS = [(1, 2, 2010, 0.5), (1, 3, 2012, 1.5), (2, 3, 2015, 2.0), (3, 1, 2001, 0.25),
         (3, 4, 2019, None), (4, 1, 2020, 3.0), (4, 5, 2021, 1.0), (5, 6, 2022, 0.75)]


def by_id(graph):
    """Node key of each person, by its primary key."""
    return {attrs["id"]: key for key, attrs in graph.nodes(data=True)}


def test_directed_graph_shape_and_attributes(graph):
    g = graph.execute("MATCH (a:Person)-[k:Knows]->(b:Person) RETURN a, k, b").get_as_networkx()
    assert isinstance(g, nx.MultiDiGraph)
    assert g.number_of_nodes() == 6
    assert g.number_of_edges() == len(KNOWS)
    keys = by_id(g)
    alice = g.nodes[keys[1]]
    assert alice["_label"] == "Person" and alice["name"] == "Alice" and alice["age"] == 35
    assert keys[1] == f"{alice['_id']['table']}:{alice['_id']['offset']}"
    assert g.nodes[keys[5]]["age"] is None
    got = set()
    for src, dst, key, attrs in g.edges(keys=True, data=True):
        assert attrs["_label"] == "Knows"
        assert key == f"{attrs['_id']['table']}:{attrs['_id']['offset']}"
        got.add((g.nodes[src]["id"], g.nodes[dst]["id"], attrs["since"], attrs["weight"]))
    assert got == set(KNOWS)
    # Directed: 3 -> 4 exists, 4 -> 3 does not.
    assert g.has_edge(keys[3], keys[4]) and not g.has_edge(keys[4], keys[3])


def test_undirected_graph(graph):
    g = graph.execute("MATCH (a:Person)-[k:Knows]->(b:Person) RETURN a, k, b").get_as_networkx(
        directed=False)
    assert isinstance(g, nx.MultiGraph) and not g.is_directed()
    keys = by_id(g)
    assert g.has_edge(keys[4], keys[3])
    # 1 -> 3 and 3 -> 1 are two parallel edges between the same pair.
    assert g.number_of_edges(keys[1], keys[3]) == 2
    assert g.number_of_edges() == len(KNOWS)


def test_repeated_values_are_added_once(graph):
    # Alice appears in every row; each rel once per row of a two-hop match.
    r = graph.execute("MATCH (a:Person)-[k1:Knows]->(b:Person)-[k2:Knows]->(c:Person) "
                      "WHERE a.id = 1 RETURN a, k1, b, k2, c")
    assert len(r) > 1
    g = r.get_as_networkx()
    rows = list(graph.execute("MATCH (a:Person)-[:Knows]->(b:Person)-[:Knows]->(c:Person) "
                              "WHERE a.id = 1 RETURN a.id, b.id, c.id"))
    assert g.number_of_nodes() == len({x for row in rows for x in row})
    hops = {(1, b) for _, b, _ in rows} | {(b, c) for _, b, c in rows}
    assert g.number_of_edges() == len(hops)


def test_nodes_only_and_scalars_only(graph):
    g = graph.execute("MATCH (p:Person) WHERE p.age > 30 RETURN p, p.name").get_as_networkx()
    assert sorted(attrs["name"] for _, attrs in g.nodes(data=True)) == ["Alice", "Carol", "Dan"]
    assert g.number_of_edges() == 0
    g = graph.execute("MATCH (p:Person) RETURN p.name").get_as_networkx()
    assert g.number_of_nodes() == 0 and g.number_of_edges() == 0


def test_rels_without_their_nodes(graph):
    g = graph.execute("MATCH (a:Person)-[k:Knows]->(b:Person) WHERE a.id = 4 RETURN k").get_as_networkx()
    # Endpoints appear as bare nodes (no attributes), edges carry the rel.
    assert g.number_of_edges() == 2 and g.number_of_nodes() == 3
    assert all(attrs == {} for _, attrs in g.nodes(data=True))
    assert sorted(attrs["since"] for _, _, attrs in g.edges(data=True)) == [2020, 2021]


def test_graph_from_copied_frames(conn):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    conn.execute("CREATE NODE TABLE City(name STRING, pop INT64, PRIMARY KEY(name))")
    conn.execute("CREATE REL TABLE Road(FROM City TO City, km DOUBLE)")
    cities = pd.DataFrame({"name": ["A", "B", "C"], "pop": [10, 20, 30]})
    roads = pd.DataFrame({"from": ["A", "B", "A"], "to": ["B", "C", "C"], "km": [1.0, 2.0, 4.5]})
    conn.execute("COPY City FROM cities; COPY Road FROM roads")
    g = conn.execute("MATCH (a:City)-[r:Road]->(b:City) RETURN a, r, b").get_as_networkx()
    names = {attrs["name"]: key for key, attrs in g.nodes(data=True)}
    assert set(names) == {"A", "B", "C"}
    assert nx.shortest_path_length(g, names["A"], names["C"], weight="km") == 3.0
    assert g.nodes[names["C"]]["pop"] == 30


def test_engine_returns_whole_nodes(conn):
    """Capability the graph export relies on: `RETURN n` gives a node dict."""
    conn.execute("CREATE NODE TABLE N(id INT64, PRIMARY KEY(id))")
    conn.execute("CREATE (:N {id: 1})")
    (node,) = conn.execute("MATCH (n:N) RETURN n").get_next()
    assert node["_label"] == "N" and node["id"] == 1 and set(node["_id"]) == {"table", "offset"}
    with pytest.raises(kithdb.RuntimeError):
        conn.execute("MATCH (n:N) RETURN n.nope")
