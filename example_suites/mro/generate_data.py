"""Generate data.sql for the MRO example database (deterministic).

Run from anywhere:  python example_suites/mro/generate_data.py
It rewrites data.sql next to this file. The output depends only on SEED, so
running it again gives a byte-identical file; change SEED or the tables below
and the suites' expected outcomes must be re-checked.

The data is synthetic: a fleet of 30 aircraft, a year (2024) of layovers at
seven stations, and the maintenance tickets raised during those layovers.
"""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

SEED = 20240917
YEAR_START = dt.date(2024, 1, 1)
DATA_CUTOFF = dt.date(2024, 12, 31)  # tickets still unfinished at this date stay open

# shop -> (station, technicians, hourly rate USD). 'Composites' has no tickets (used by the vacuous case).
SHOPS = {
    "Avionics": ("SIN", 42, 135),
    "Cabin": ("SIN", 35, 95),
    "Composites": ("SIN", 9, 125),
    "Engines": ("SIN", 58, 160),
    "Hydraulics": ("HKG", 24, 120),
    "Landing Gear": ("SIN", 27, 140),
    "Structures": ("HKG", 31, 110),
    "Wheels and Brakes": ("SIN", 18, 105),
}

# type -> (manufacturer, registration prefix, count, first delivery year, last delivery year)
FLEET = [
    ("A350-900", "Airbus", "9V-SM", 10, 2016, 2022),
    ("B777-300ER", "Boeing", "9V-SW", 6, 2012, 2016),
    ("B787-10", "Boeing", "9V-SC", 6, 2018, 2023),
    ("A320neo", "Airbus", "9V-TN", 5, 2019, 2023),
    ("B737-8", "Boeing", "9V-MB", 3, 2021, 2023),
]

# check type -> (weight, stations allowed, ground days (min, max), tickets per layover (min, max))
CHECKS = {
    "transit": (40, ["SIN", "HKG", "NRT", "SYD", "LHR", "BKK", "MEL"], (0, 0), (0, 2)),
    "daily": (30, ["SIN", "HKG", "NRT", "SYD", "BKK"], (0, 1), (1, 3)),
    "weekly": (18, ["SIN", "HKG", "NRT"], (1, 1), (2, 4)),
    "A-check": (10, ["SIN", "HKG"], (1, 2), (5, 10)),
}
C_CHECK = (["SIN"], (16, 26), (26, 40))

# shop -> list of (ATA chapter, description templates)
WORK = {
    "Avionics": [
        (23, ["Cabin PA system inoperative", "VHF 2 intermittent transmit", "ACARS printer fault"]),
        (31, ["ECAM display flicker", "Flight data recorder fault message", "Clock display blank"]),
        (34, ["Weather radar fault message", "ADIRU 2 alignment fault", "ILS receiver intermittent", "GPS 1 signal loss"]),
    ],
    "Cabin": [
        (25, ["Seat recline inoperative", "Galley oven inoperative", "Overhead bin latch broken", "IFE screen blank"]),
        (33, ["Reading light inoperative", "Emergency lighting strip faded"]),
        (38, ["Lavatory flush inoperative", "Potable water leak under galley"]),
    ],
    "Engines": [
        (49, ["APU start fault", "APU oil leak found"]),
        (71, ["Engine cowl latch damaged", "Engine mount inspection finding"]),
        (72, ["Fan blade nick found on borescope", "HPT blade erosion on borescope"]),
        (79, ["Engine oil consumption high", "Engine oil leak at gearbox"]),
    ],
    "Hydraulics": [
        (21, ["Pack 1 overheat fault", "Cabin temperature controller fault"]),
        (29, ["Green system hydraulic leak", "Hydraulic pump low pressure"]),
        (36, ["Bleed air leak detected", "Pneumatic duct clamp loose"]),
    ],
    "Landing Gear": [
        (32, ["Main gear shock strut low", "Nose gear steering fault", "Gear retraction actuator leak", "Landing gear proximity sensor fault"]),
    ],
    "Structures": [
        (52, ["Cargo door seal damaged", "Passenger door slide bustle loose"]),
        (53, ["Fuselage skin dent found", "Floor panel delamination"]),
        (57, ["Wing leading edge dent", "Wing access panel fastener missing"]),
    ],
    "Wheels and Brakes": [
        (32, ["Brake wear pin at limit", "Main wheel tyre cut", "Nose wheel tyre worn", "Brake temperature sensor fault"]),
    ],
}

# shop weights per layover kind (line maintenance vs hangar checks)
LINE_WEIGHTS = {"Avionics": 26, "Cabin": 24, "Engines": 12, "Hydraulics": 10,
                "Landing Gear": 8, "Structures": 7, "Wheels and Brakes": 13}
HANGAR_WEIGHTS = {"Avionics": 16, "Cabin": 22, "Engines": 18, "Hydraulics": 12,
                  "Landing Gear": 10, "Structures": 16, "Wheels and Brakes": 6}

# hours (in half hours) per shop: (min, max)
HALF_HOURS = {"Avionics": (1, 24), "Cabin": (1, 16), "Engines": (4, 80), "Hydraulics": (2, 40),
              "Landing Gear": (4, 60), "Structures": (4, 70), "Wheels and Brakes": (2, 12)}
COST = {"Avionics": (200, 18000), "Cabin": (50, 4000), "Engines": (500, 60000), "Hydraulics": (300, 15000),
        "Landing Gear": (800, 40000), "Structures": (100, 9000), "Wheels and Brakes": (1500, 12000)}


def build(rng: random.Random):
    shops = [(name, *values) for name, values in SHOPS.items()]

    aircraft = []
    for aircraft_type, maker, prefix, count, first, last in FLEET:
        for i in range(count):
            registration = prefix + chr(ord("A") + i)
            aircraft.append((registration, aircraft_type, maker, rng.randint(first, last), "SIN"))

    # eight aircraft get a C-check during the year, at fixed spread-out start dates
    c_check_regs = sorted(rng.sample([a[0] for a in aircraft], 8))
    c_check_start = {reg: YEAR_START + dt.timedelta(days=30 + 38 * k) for k, reg in enumerate(c_check_regs)}

    layovers = []
    kinds = list(CHECKS)
    weights = [CHECKS[k][0] for k in kinds]
    for registration, *_ in aircraft:
        day = YEAR_START + dt.timedelta(days=rng.randint(0, 12))
        c_start = c_check_start.get(registration)
        while day <= dt.date(2024, 12, 20):
            if c_start is not None and day >= c_start:
                check, stations, (lo, hi), _ = "C-check", *C_CHECK
                c_start = None
            else:
                check = rng.choices(kinds, weights)[0]
                _, stations, (lo, hi), _ = CHECKS[check]
            station = "SIN" if check == "C-check" else rng.choice(stations)
            days = rng.randint(lo, hi)
            arrival, departure = day, day + dt.timedelta(days=days)
            # all three draws happen for every layover (so the random stream does not depend on the check type);
            # A-checks and C-checks are planned in whole days
            hours = {"transit": rng.randint(1, 3), "daily": rng.randint(6, 10), "weekly": rng.randint(10, 14)}.get(check, 24 * days)
            layovers.append([registration, station, check, arrival, departure, hours])
            day = departure + dt.timedelta(days=rng.randint(10, 36))
    layovers.sort(key=lambda row: (row[3], row[0]))
    layovers = [(i + 1, *row) for i, row in enumerate(layovers)]

    tickets = []
    for layover_id, registration, station, check, arrival, departure, _hours in layovers:
        lo, hi = C_CHECK[2] if check == "C-check" else CHECKS[check][3]
        weights_by_shop = HANGAR_WEIGHTS if check in ("A-check", "C-check") else LINE_WEIGHTS
        for _ in range(rng.randint(lo, hi)):
            shop = rng.choices(list(weights_by_shop), list(weights_by_shop.values()))[0]
            ata, texts = rng.choice(WORK[shop])
            description = rng.choice(texts)
            if check == "C-check":
                priority = rng.choices(["AOG", "urgent", "routine"], [2, 15, 83])[0]
            else:
                priority = rng.choices(["AOG", "urgent", "routine"], [10, 28, 62])[0]
            opened = arrival + dt.timedelta(days=rng.randint(0, (departure - arrival).days))
            if priority == "AOG":
                duration = rng.randint(0, 2)
            elif priority == "urgent":
                duration = rng.randint(0, 6)
            else:
                duration = rng.randint(0, 21)
            closed = opened + dt.timedelta(days=duration)
            if priority == "routine" and rng.random() < 0.07:
                status, closed_date = "deferred", None
            elif closed > DATA_CUTOFF:
                status, closed_date = "open", None
            elif priority != "AOG" and rng.random() < 0.03:
                status, closed_date = "open", None
            else:
                status, closed_date = "closed", closed
            hlo, hhi = HALF_HOURS[shop]
            hours = rng.randint(hlo, hhi) / 2
            if status == "open" and rng.random() < 0.5:
                hours = None
            clo, chi = COST[shop]
            cost = 0 if rng.random() < 0.35 else rng.randint(clo, chi)
            tickets.append([layover_id, registration, shop, ata, station, priority, status, description,
                            hours, cost, opened, closed_date])

    balance_gear_shops(tickets)
    tickets = [(1000 + i + 1, *row) for i, row in enumerate(tickets)]
    return shops, aircraft, layovers, tickets


def balance_gear_shops(tickets: list[list]) -> None:
    """Give 'Landing Gear' and 'Wheels and Brakes' the same number of tickets.

    Both shops work ATA 32, so moving ATA 32 tickets between them keeps the data
    consistent; the deliberate tie makes tie handling visible in the suite.
    """
    gear = [t for t in tickets if t[2] == "Landing Gear"]
    wheels = [t for t in tickets if t[2] == "Wheels and Brakes"]
    bigger, target = (gear, "Wheels and Brakes") if len(gear) > len(wheels) else (wheels, "Landing Gear")
    moves = abs(len(gear) - len(wheels)) // 2
    texts = WORK[target][0][1]
    for k, ticket in enumerate(bigger[-moves:] if moves else []):
        ticket[2] = target
        ticket[7] = texts[k % len(texts)]
    if abs(len(gear) - len(wheels)) % 2:
        # odd difference: the last ticket of the bigger shop moves to Structures as a gear-bay finding
        ticket = bigger[-moves - 1]
        ticket[2], ticket[3], ticket[7] = "Structures", 53, "Fuselage skin dent found"


def sql_value(value) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, dt.date):
        return f"'{value.isoformat()}'"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def inserts(table: str, columns: list[str], rows, chunk: int = 25) -> list[str]:
    out = []
    for start in range(0, len(rows), chunk):
        values = ",\n".join("  (" + ", ".join(sql_value(v) for v in row) + ")" for row in rows[start:start + chunk])
        out.append(f"INSERT INTO {table} ({', '.join(columns)}) VALUES\n{values};\n\n")
    return out


def main() -> None:
    shops, aircraft, layovers, tickets = build(random.Random(SEED))
    parts = [
        "-- Generated by generate_data.py (SEED = %d). Do not edit by hand: change the generator and rerun it.\n" % SEED,
        "-- %d shops, %d aircraft, %d layovers, %d tickets.\n\n" % (len(shops), len(aircraft), len(layovers), len(tickets)),
    ]
    parts += inserts("shops", ["shop", "station", "technicians", "hourly_rate"], shops)
    parts += inserts("aircraft", ["registration", "aircraft_type", "manufacturer", "delivery_year", "home_station"], aircraft)
    parts += inserts("aircraft_layovers", ["layover_id", "registration", "station", "check_type", "arrival_date",
                                           "departure_date", "ground_hours"], layovers)
    parts += inserts("tickets", ["ticket_id", "layover_id", "registration", "shop", "ata_chapter", "station", "priority",
                                 "status", "description", "labor_hours", "parts_cost", "open_date", "closed_date"], tickets)
    target = Path(__file__).with_name("data.sql")
    target.write_text("".join(parts), encoding="utf-8")
    print(f"wrote {target} ({len(shops) + len(aircraft) + len(layovers) + len(tickets)} rows)")


if __name__ == "__main__":
    main()
