-- Aviation MRO example database (modelled on the MRO text-to-SQL paper, section 2.2).
-- The same script loads unchanged into SQLite, DuckDB and PostgreSQL 15:
-- portable types only, dates are TEXT 'YYYY-MM-DD', money is whole US dollars,
-- labour hours are multiples of 0.5 (exact in binary floating point).

CREATE TABLE shops (
    shop         VARCHAR(30) PRIMARY KEY,   -- MRO shop name, e.g. 'Avionics'
    station      VARCHAR(3)  NOT NULL,      -- IATA code of the shop's base, e.g. 'SIN'
    technicians  INTEGER     NOT NULL,      -- certified technicians on the roster
    hourly_rate  INTEGER     NOT NULL       -- billed labour rate, USD per hour
);

CREATE TABLE aircraft (
    registration   VARCHAR(10) PRIMARY KEY, -- e.g. '9V-SMA'
    aircraft_type  VARCHAR(20) NOT NULL,    -- e.g. 'A350-900'
    manufacturer   VARCHAR(20) NOT NULL,    -- 'Airbus' or 'Boeing'
    delivery_year  INTEGER     NOT NULL,
    home_station   VARCHAR(3)  NOT NULL
);

CREATE TABLE aircraft_layovers (
    layover_id      INTEGER     PRIMARY KEY,
    registration    VARCHAR(10) NOT NULL REFERENCES aircraft (registration),
    station         VARCHAR(3)  NOT NULL,   -- where the aircraft is on the ground
    check_type      VARCHAR(10) NOT NULL,   -- 'transit', 'daily', 'weekly', 'A-check', 'C-check'
    arrival_date    TEXT        NOT NULL,   -- 'YYYY-MM-DD'
    departure_date  TEXT        NOT NULL,   -- 'YYYY-MM-DD', same day or later
    ground_hours    INTEGER     NOT NULL    -- planned ground time
);

CREATE TABLE tickets (
    ticket_id     INTEGER     PRIMARY KEY,
    layover_id    INTEGER     NOT NULL REFERENCES aircraft_layovers (layover_id),
    registration  VARCHAR(10) NOT NULL REFERENCES aircraft (registration),
    shop          VARCHAR(30) NOT NULL REFERENCES shops (shop),
    ata_chapter   INTEGER     NOT NULL,     -- ATA 100 chapter, e.g. 32 = landing gear
    station       VARCHAR(3)  NOT NULL,     -- station where the ticket was raised
    priority      VARCHAR(10) NOT NULL,     -- 'AOG', 'urgent', 'routine'
    status        VARCHAR(10) NOT NULL,     -- 'open', 'closed', 'deferred'
    description   TEXT        NOT NULL,
    labor_hours   DOUBLE PRECISION,         -- NULL while nobody has booked time
    parts_cost    INTEGER     NOT NULL,     -- USD
    open_date     TEXT        NOT NULL,     -- 'YYYY-MM-DD'
    closed_date   TEXT                      -- NULL unless status = 'closed'
);
