"""A generated shop namespace whose join keys are known: customers, orders, products, cities
and stores, with an id spelled three ways ("C-001", "c001"; "P-0001" and 1), country names
against ISO codes, city names with typos, and store coordinates near their city's.

`KNOWN_LINKS` is the truth that candidate precision and recall are measured against."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from datawell.services import Services
from datawell.storage.access import NamespaceRef, ensure_namespace
from datawell.storage.datasets import DatasetRef, create_dataset
from datawell.storage.users import find_user

COUNTRIES = [
    ("France", "FR"),
    ("Germany", "DE"),
    ("Côte d'Ivoire", "CI"),
    ("United States", "US"),
    ("Japan", "JP"),
    ("Brazil", "BR"),
    ("Spain", "ES"),
    ("Italy", "IT"),
    ("Canada", "CA"),
    ("Netherlands", "NL"),
    ("Sweden", "SE"),
    ("Mexico", "MX"),
]
CITIES = [
    ("Paris", 48.8566, 2.3522),
    ("Marseille", 43.2965, 5.3698),
    ("Lyon", 45.7640, 4.8357),
    ("Toulouse", 43.6047, 1.4442),
    ("Nice", 43.7102, 7.2620),
    ("Nantes", 47.2184, -1.5536),
    ("Strasbourg", 48.5734, 7.7521),
    ("Montpellier", 43.6108, 3.8767),
    ("Bordeaux", 44.8378, -0.5792),
    ("Lille", 50.6292, 3.0573),
    ("Rennes", 48.1173, -1.6778),
    ("Reims", 49.2583, 4.0317),
    ("Saint-Étienne", 45.4397, 4.3872),
    ("Toulon", 43.1242, 5.9280),
    ("Grenoble", 45.1885, 5.7245),
    ("Dijon", 47.3220, 5.0415),
    ("Angers", 47.4784, -0.5632),
    ("Nîmes", 43.8367, 4.3601),
    ("Villeurbanne", 45.7719, 4.8902),
    ("Clermont-Ferrand", 45.7772, 3.0870),
    ("Le Mans", 48.0061, 0.1996),
    ("Aix-en-Provence", 43.5297, 5.4474),
    ("Brest", 48.3904, -4.4861),
    ("Tours", 47.3941, 0.6848),
    ("Amiens", 49.8941, 2.2958),
    ("Limoges", 45.8336, 1.2611),
    ("Perpignan", 42.6887, 2.8948),
    ("Metz", 49.1193, 6.1757),
    ("Besançon", 47.2378, 6.0241),
    ("Orléans", 47.9030, 1.9093),
]
FIRST = ["Anna", "Louis", "Chloé", "Hugo", "Léa", "Noah", "Emma", "Jules", "Inès", "Adam", "Sofia", "Liam"]
LAST = ["Martin", "Bernard", "Dubois", "Thomas", "Robert", "Richard", "Petit", "Durand", "Leroy", "Moreau"]
CATEGORIES = ["books", "garden", "kitchen", "toys", "sports"]

SCHEMAS: dict[str, tuple[str, dict[str, str], dict[str, str]]] = {
    "customers": (
        "Customers of the web shop",
        {
            "customer_id": "Customer identifier",
            "name": "Full name",
            "email": "Email address",
            "country": "Country of residence",
            "city": "City of residence",
            "signup_year": "Year the account was opened",
        },
        {"signup_year": "integer"},
    ),
    "orders": (
        "Orders placed in the web shop",
        {
            "order_id": "Order number",
            "customer": "Who ordered (customer reference)",
            "product": "Product ordered (catalogue number)",
            "quantity": "Units ordered",
            "amount": "Amount paid in EUR",
            "ship_country": "Destination country code",
        },
        {"order_id": "integer", "product": "integer", "quantity": "integer", "amount": "real"},
    ),
    "products": (
        "Product catalogue",
        {"sku": "Product catalogue number", "title": "Product title", "price": "Unit price", "category": "Category"},
        {"price": "real"},
    ),
    "cities": (
        "French cities with coordinates",
        {"city": "City name", "lat": "Latitude", "lon": "Longitude", "population": "Inhabitants"},
        {"lat": "real", "lon": "real", "population": "integer"},
    ),
    "stores": (
        "Our stores",
        {
            "store_id": "Store code",
            "city_name": "Town the store is in, as typed by staff",
            "latitude": "Store latitude",
            "longitude": "Store longitude",
            "opened_year": "Year the store opened",
        },
        {"latitude": "real", "longitude": "real", "opened_year": "integer"},
    ),
}

# The links a careful analyst would draw (unordered pairs of `dataset.field`).
KNOWN_LINKS = {
    frozenset({"orders.customer", "customers.customer_id"}),
    frozenset({"orders.product", "products.sku"}),
    frozenset({"orders.ship_country", "customers.country"}),
    frozenset({"customers.city", "cities.city"}),
    frozenset({"stores.city_name", "cities.city"}),
    frozenset({"stores.city_name", "customers.city"}),
    frozenset({"stores.latitude,longitude", "cities.lat,lon"}),
}


def typo(word: str, rng: random.Random) -> str:
    """One slip of the keyboard: a letter dropped, doubled or swapped with the next."""
    i = rng.randrange(1, len(word) - 1)
    kind = rng.choice(["drop", "double", "swap"])
    if kind == "drop":
        return word[:i] + word[i + 1 :]
    if kind == "double":
        return word[:i] + word[i] + word[i:]
    return word[:i] + word[i + 1] + word[i] + word[i + 2 :]


def generate(seed: int = 7) -> dict[str, list[dict[str, Any]]]:
    rng = random.Random(seed)
    customers = []
    for n in range(1, 201):
        country = rng.choice(COUNTRIES)[0]
        first, last = rng.choice(FIRST), rng.choice(LAST)
        customers.append(
            {
                "customer_id": f"C-{n:03d}",
                "name": f"{first} {last}",
                "email": f"{first.lower()}.{last.lower()}{n}@example.org",
                "country": country,
                "city": rng.choice(CITIES)[0],
                "signup_year": rng.randint(2015, 2024),
            }
        )
    products = [
        {
            "sku": f"P-{n:04d}",
            "title": f"{rng.choice(['Blue', 'Red', 'Big', 'Small'])} {rng.choice(CATEGORIES)} item {n}",
            "price": round(rng.uniform(2, 200), 2),
            "category": rng.choice(CATEGORIES),
        }
        for n in range(1, 51)
    ]
    codes = dict(COUNTRIES)
    orders = []
    for n in range(1, 1001):
        customer = rng.choice(customers)
        product = rng.randint(1, 50)
        quantity = rng.randint(1, 10)
        orders.append(
            {
                "order_id": n,
                "customer": customer["customer_id"].replace("-", "").lower(),
                "product": product,
                "quantity": quantity,
                "amount": round(products[product - 1]["price"] * quantity, 2),
                "ship_country": codes[customer["country"]],
            }
        )
    cities = [
        {"city": name, "lat": lat, "lon": lon, "population": rng.randint(100_000, 2_000_000)}
        for name, lat, lon in CITIES
    ]
    stores = []
    for n, (name, lat, lon) in enumerate(CITIES[:25], start=1):
        spelled = typo(name, rng) if n % 5 else name
        stores.append(
            {
                "store_id": f"S-{n:02d}",
                "city_name": spelled,
                # within about 300 m of the city's point
                "latitude": round(lat + rng.uniform(-0.002, 0.002), 6),
                "longitude": round(lon + rng.uniform(-0.002, 0.002), 6),
                "opened_year": rng.randint(2015, 2024),
            }
        )
    return {"customers": customers, "orders": orders, "products": products, "cities": cities, "stores": stores}


@dataclass
class Shop:
    namespace: NamespaceRef
    datasets: dict[str, DatasetRef]


async def load(services: Services, owner: str, namespace: str = "shop", only: list[str] | None = None) -> Shop:
    """Create the shop's datasets in `owner/namespace` and publish their rows."""
    data = generate()
    created: dict[str, DatasetRef] = {}
    async with services.db.session() as session:
        user = await find_user(session, owner)
        assert user is not None
        ref = await ensure_namespace(session, user, namespace)
        for name in only or list(SCHEMAS):
            description, schema, types = SCHEMAS[name]
            dataset = await create_dataset(session, ref, name, description, schema, user)
            dataset.record.field_types = {field: types.get(field, "text") for field in schema}
            created[name] = dataset
    for name, dataset in created.items():
        ingestion = f"00000000-0000-4000-8000-{abs(hash(name)) % 10**12:012d}"
        await services.rows.stage(dataset.record, ingestion)
        await services.rows.write(dataset.record, ingestion, data[name])
        await services.rows.publish(dataset.record, ingestion, source=f"{name}.csv")
    return Shop(ref, created)
