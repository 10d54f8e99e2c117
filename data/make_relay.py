"""Write data/relay_world.json: the relay lines of chapter 17's long tasks, made up from a fixed seed.

    .venv/bin/python data/make_relay.py          # rewrite the file
    .venv/bin/python data/make_relay.py --check  # compare with the file, write nothing

Each line is one long task. A parcel's fee is the tariff on its dispatch slip (read once, at the
start) times the distance from the depot to the line's last station (read at the end), and the
stations must be walked one page at a time: each page names the next station. A baseline run
takes one step for the slip, one per station, one Calculate and one Finish: the line with S
stations is the task of S + 3 steps, so the nine lines make tasks of 20, 25, ..., 60 steps.

Every name, tariff and distance is invented (from random.Random(SEED)); the filler sentences on
each page hold no digit, so the only numbers a page states are its station's place and distance.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent / "relay_world.json"
SEED = 17
LINES = ["Amber", "Birch", "Cobalt", "Dune", "Ember", "Fern", "Garnet", "Heron", "Indigo"]
STEPS = [20, 25, 30, 35, 40, 45, 50, 55, 60]  # the baseline's steps per task: stations + 3
FIRST = """Alder Ash Bell Bramble Brook Cedar Clay Copper Crane Crow Dale Elm Flint Fox Glen Gorse Hare Hazel
Hollow Iron Juniper Kestrel Lark Linden Marsh Mill Moss Oak Otter Pine Quarry Raven Reed Rowan Rush Sand Sedge
Slate Sorrel Stone Swan Thorn Willow Wren Yarrow""".split()
SECOND = """Bridge Cross End Field Ford Gate Green Hill Junction Lane Lock Market Meadow Mill Park Quay Rise Row
Square Street Vale View Walk Well Wharf Yard""".split()
FILLER = [
    "The platform has a covered waiting room and a parcel desk that opens at dawn.",
    "Couriers hand over sealed bags here and sign the route book before they leave.",
    "A small café by the ticket office sells tea, soup and fresh bread to the drivers.",
    "The old signal box was turned into a museum about the early days of the post.",
    "Bicycles can be hired at the gate, and the cycle path follows the river north.",
    "The station was rebuilt in brick after a flood, and the clock still runs slow.",
    "Night trains stop here only on request; ask the guard before you board.",
    "A market fills the square outside on weekends, with fish, cheese and flowers.",
    "Lost parcels are kept in the back office and returned on the next train down.",
    "The stationmaster keeps bees, and jars of honey are sold at the parcel desk.",
    "Snow closes the northern approach in winter, so the line runs a little slower.",
    "A footbridge crosses the tracks to the bus stop and the village hall.",
    "The waiting room walls are covered with maps of the line drawn by local children.",
    "Porters here load the mail vans by hand, one sack at a time, in any weather.",
    "The platform lamps are lit by hand each evening, as they have always been.",
    "Visitors often stop to photograph the painted sign above the booking hall.",
]


def station_page(line: str, number: int, total: int, name: str, km: int, following: str, filler: list) -> str:
    """One station's page: filler, then the sentences the relay needs (place, distance, next station)."""
    place = f"Station {number} of {total} on the {line} line: {name}"
    if number == total:
        key = f"{place}, the end of the line. {km} km from the depot."
    else:
        key = f"{place}. {km} km from the depot. Next station: {following}."
    return f"{name}. {' '.join(filler)} {key}"


def build() -> dict:
    rng = random.Random(SEED)
    names = [f"{a} {b}" for a in FIRST for b in SECOND]
    rng.shuffle(names)
    lines = []
    for index, (line, steps) in enumerate(zip(LINES, STEPS)):
        total = steps - 3
        stations = [names.pop() for _ in range(total)]
        km, pages = 0, {}
        distances = []
        for number, name in enumerate(stations, 1):
            km += rng.randint(6, 19)
            distances.append(km)
            following = stations[number] if number < total else ""
            pages[name] = station_page(line, number, total, name, km, following, rng.sample(FILLER, 3))
        tariff = rng.randint(2, 9)
        parcel = f"P-{11 + 7 * index}"
        lines.append({"id": f"relay-{steps}", "line": line, "parcel": parcel, "tariff": tariff,
                      "stations": stations, "distance_km": distances[-1], "fee": tariff * distances[-1],
                      "steps": steps, "pages": pages})
    return {"seed": SEED, "made_by": "python data/make_relay.py", "lines": lines}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the file, write nothing")
    args = parser.parse_args(argv)
    text = json.dumps(build(), indent=1, ensure_ascii=False) + "\n"
    if args.check:
        same = OUT.is_file() and OUT.read_text(encoding="utf-8") == text
        print("data/relay_world.json is up to date" if same else "data/relay_world.json differs: rewrite it")
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.name}: {len(STEPS)} lines of {STEPS[0] - 3} to {STEPS[-1] - 3} stations")
    return 0


if __name__ == "__main__":
    sys.exit(main())
