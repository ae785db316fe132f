"""A hand-written table of everyday synonyms, for the synonym-perturbed question sets of
`bench_linking.py`.

It was written from general English, word by word, without looking at any database's index or
at what the linker matches: a noun people use for a thing, and other nouns people use for the
same thing. Nouns only: they are what tables and columns are named after (a first draft also
swapped verbs and adjectives, "how many" becoming "how numerous", which tests grammar rather
than linking, and "name" becoming "title", which is no synonym in a database). A question is
perturbed by replacing the words it shares with this table (seeded, so the set is the same on
every run).
"""

from __future__ import annotations

import random
import re

SYNONYMS: dict[str, list[str]] = {
    "singer": ["vocalist"],
    "song": ["track", "tune"],
    "album": ["record"],
    "artist": ["performer"],
    "musician": ["performer"],
    "concert": ["gig", "show"],
    "movie": ["film", "picture"],
    "film": ["movie", "picture"],
    "actor": ["performer"],
    "director": ["filmmaker"],
    "student": ["pupil", "learner"],
    "teacher": ["instructor", "educator"],
    "professor": ["lecturer", "academic"],
    "school": ["academy"],
    "course": ["class", "module"],
    "grade": ["mark"],
    "employee": ["staff member", "worker"],
    "staff": ["personnel", "employees"],
    "salary": ["pay", "wage", "earnings"],
    "manager": ["supervisor", "boss"],
    "company": ["firm", "business"],
    "customer": ["client", "buyer"],
    "client": ["customer"],
    "product": ["item", "good"],
    "price": ["cost"],
    "cost": ["price", "expense"],
    "amount": ["sum", "quantity"],
    "payment": ["remittance"],
    "store": ["shop", "outlet"],
    "shop": ["store"],
    "country": ["nation"],
    "city": ["town"],
    "town": ["city"],
    "address": ["location"],
    "street": ["road"],
    "car": ["automobile", "vehicle"],
    "vehicle": ["automobile"],
    "airline": ["carrier"],
    "airport": ["airfield"],
    "flight": ["trip"],
    "ship": ["vessel"],
    "team": ["squad", "side"],
    "player": ["athlete"],
    "game": ["match", "contest"],
    "race": ["contest"],
    "driver": ["racer"],
    "coach": ["trainer"],
    "stadium": ["arena", "venue"],
    "book": ["volume", "publication"],
    "author": ["writer"],
    "writer": ["author"],
    "journal": ["periodical"],
    "paper": ["article"],
    "hospital": ["clinic", "medical center"],
    "doctor": ["physician"],
    "patient": ["case"],
    "disease": ["illness", "condition"],
    "people": ["persons", "individuals"],
    "person": ["individual"],
    "member": ["participant"],
    "capacity": ["size"],
    "population": ["inhabitants"],
    "budget": ["funding"],
    "revenue": ["income", "turnover"],
    "profit": ["gain"],
    "sales": ["turnover"],
    "language": ["tongue"],
    "department": ["division"],
    "building": ["edifice"],
    "room": ["chamber"],
    "owner": ["proprietor"],
    "pet": ["animal"],
    "dog": ["hound"],
    "cat": ["feline"],
    "phone": ["telephone"],
    "email": ["e-mail"],
    "job": ["position", "role"],
    "role": ["function"],
    "event": ["occasion"],
    "party": ["celebration"],
    "club": ["society"],
    "expense": ["expenditure", "cost"],
    "income": ["earnings"],
    "loan": ["credit"],
    "account": ["ledger"],
    "bank": ["lender"],
    "transaction": ["operation"],
    "user": ["account holder"],
    "post": ["message"],
    "comment": ["remark"],
    "vote": ["ballot"],
    "badge": ["award"],
    "hero": ["champion"],
    "power": ["ability"],
    "molecule": ["compound"],
    "atom": ["particle"],
    "bond": ["link"],
    "element": ["component"],
    "examination": ["test", "checkup"],
    "laboratory": ["lab"],
    "circuit": ["track"],
    "season": ["campaign"],
    "league": ["division"],
    "attribute": ["characteristic", "property"],
    "gas": ["fuel"],
    "station": ["stop"],
    "district": ["region", "area"],
    "county": ["shire"],
    "enrollment": ["registration"],
    "meal": ["lunch"],
    "document": ["file"],
    "museum": ["gallery"],
    "visitor": ["guest"],
}

_WORD = re.compile(r"[A-Za-z][A-Za-z']*")


def _plural(word: str) -> str:
    if word.endswith("y") and len(word) > 2 and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    if word.endswith(("s", "x", "ch", "sh")):
        return word + "es"
    return word + "s"


def _lookup(word: str) -> tuple[str, bool] | None:
    """The table's entry for a word and whether the word was its plural."""
    lowered = word.lower()
    if lowered in SYNONYMS:
        return lowered, False
    for singular in (lowered[:-3] + "y", lowered[:-2], lowered[:-1]):
        if len(lowered) > 3 and singular in SYNONYMS and _plural(singular) == lowered:
            return singular, True
    return None


def perturb(question: str, seed: int) -> tuple[str, int]:
    """The question with every word of the table replaced by one of its synonyms (chosen by
    a generator seeded with `seed`), and how many words were replaced. Quoted text is left
    alone: it names stored values."""
    rng = random.Random(seed)
    replaced = 0
    out: list[str] = []
    position = 0
    quoted = [(m.start(), m.end()) for m in re.finditer(r"'[^']*'|\"[^\"]*\"", question)]
    for match in _WORD.finditer(question):
        start, end = match.span()
        out.append(question[position:start])
        position = end
        word = match.group()
        entry = _lookup(word)
        inside = any(a <= start < b for a, b in quoted)
        if entry is None or inside or (word[:1].isupper() and start > 0):
            out.append(word)  # a capitalised word inside a sentence is a name: keep it
            continue
        key, plural = entry
        choice = rng.choice(SYNONYMS[key])
        if plural:
            head, _, tail = choice.rpartition(" ")
            choice = f"{head} {_plural(tail)}".strip()
        if word[:1].isupper():
            choice = choice[:1].upper() + choice[1:]
        out.append(choice)
        replaced += choice.lower() != word.lower()
    out.append(question[position:])
    return "".join(out), replaced
