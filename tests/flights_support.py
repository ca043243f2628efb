"""The small airline database of the interaction tests (two tables, a foreign key)."""

FLIGHTS_SQL = """
CREATE TABLE airlines (id INTEGER PRIMARY KEY, name TEXT, country TEXT);
CREATE TABLE flights (id INTEGER PRIMARY KEY, airline_id INTEGER REFERENCES airlines(id), src TEXT, dst TEXT,
                      price REAL);
INSERT INTO airlines VALUES (1, 'JetBlue', 'US'), (2, 'Lufthansa', 'DE'), (3, 'Delta', 'US');
INSERT INTO flights VALUES (1, 1, 'BOS', 'JFK', 100), (2, 2, 'FRA', 'JFK', 500), (3, 3, 'ATL', 'LAX', 200),
                           (4, 1, 'JFK', 'LAX', 300);
"""
