"""A generated multi-session conversation benchmark with annotated evidence (for bench_recall.py).

Deterministic for a seed. A user talks with an assistant over many sessions of small talk
(cooking, weather, work, travel, sport, films, home, tech; names, cities and dates recur
across them as distractors). Planted among the small talk are facts, each one user turn;
questions asked later use other words than the fact (other word forms, dates written
another way, only the names and a noun in common), of these types:

- ``single``: one fact, asked back in other words.
- ``temporal``: an event on a date, asked by the date written another way.
- ``update``: a fact, and a later one that replaces it; the question asks for the current
  value (evidence: the later turn).
- ``multi-hop``: two facts in different sessions that only answer together (evidence: both).
- ``distractor``: a fact about one person beside near-identical facts about others.
- ``chinese``: a fact and its question in Chinese, worded differently.

Every question lists its evidence turns as ``(session key, seq)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import random

__all__ = ["Benchmark", "Question", "generate"]

NAMES = ["Emma", "Priya", "Marco", "Aiko", "Lukas", "Sofia", "Omar", "Chloe", "Mateo", "Hana", "Noah", "Zara", "Felix", "Ines", "Kenji", "Leila", "Oscar", "Maya", "Tariq", "Greta", "Ravi", "Elena", "Jonas", "Amara", "Diego", "Yuki", "Nadia", "Hugo", "Lina", "Samir", "Ada", "Bruno", "Carmen", "Dmitri", "Esther", "Farid", "Gemma", "Hector", "Ida", "Javier", "Kaia", "Lorenzo", "Mira", "Nils", "Olga", "Pablo", "Quinn", "Rosa", "Stefan", "Tomas", "Ursula", "Viktor", "Wanda", "Xavier", "Yara", "Zoltan", "Alba", "Boris", "Clara", "Dario", "Elif", "Fatima", "Gustav", "Helga", "Igor", "Jana", "Karim", "Lotte", "Milan", "Nora", "Otto", "Paula", "Rafael", "Selma", "Timo", "Uma", "Vera", "Wilhelm", "Yusuf", "Zofia", "Anouk", "Basil", "Celine", "Dafne", "Emil", "Flora", "Gideon", "Hilde", "Ivo", "Jasper", "Kira", "Leon", "Magnus", "Nina", "Orla", "Pedro", "Rhea", "Silas", "Thea", "Ugo", "Valentina", "Wim", "Xenia", "Yannick", "Zeno", "Agnes", "Benedikt", "Cosima", "Dorian", "Edda", "Florin", "Gisela", "Henrik", "Irene", "Joost", "Klara"]
CITIES = ["Lisbon", "Porto", "Tokyo", "Osaka", "Berlin", "Munich", "Toronto", "Denver", "Nairobi", "Hanoi", "Oslo",
          "Seville", "Krakow", "Austin", "Melbourne", "Dublin", "Valencia", "Kyoto", "Boston", "Lyon"]
RELATIONS = ["sister", "brother", "colleague", "neighbour", "cousin", "friend", "manager", "roommate"]
COMPANIES = ["Acme", "Globex", "Initech", "Umbrella", "Hooli", "Vandelay", "Stark", "Wayne", "Tyrell", "Cyberdyne", "Soylent", "Massive", "Aperture", "Gringotts", "Monarch", "Nakatomi", "Oscorp", "Pied", "Piper", "Prestige", "Sirius", "Virtucon", "Wonka", "Zorg", "Gekko", "Duff", "Krusty", "Dunder", "Bluth", "Sterling", "Pendant", "Axiom", "Contoso", "Fabrikam", "Northwind", "Tailspin", "Litware", "Proseware", "Adatum", "Woodgrove", "Lucerne", "Margie", "Humongous"]
JOBS = ["designer", "data analyst", "product manager", "nurse", "teacher", "backend engineer", "accountant", "architect"]
BREEDS = ["beagle", "corgi", "poodle", "labrador", "husky", "dachshund", "greyhound", "spaniel"]
PETNAMES = ["Biscuit", "Pepper", "Mochi", "Waffles", "Noodle", "Ziggy", "Bramble", "Clover", "Pickles", "Juniper"]
BOOKS = ["Dune", "Middlemarch", "Neuromancer", "Beloved", "Solaris", "Rebecca", "Ulysses", "Persuasion", "Hyperion", "Frankenstein", "Dracula", "Lolita", "Watership", "Rebecca", "Siddhartha", "Candide", "Walden", "Ivanhoe", "Kidnapped", "Matilda", "Coraline", "Stardust", "Shogun", "Gilead", "Atonement", "Possession", "Orlando", "Nostromo", "Germinal", "Oblomov", "Demian", "Pnin", "Kokoro", "Sula", "Quo", "Vadis", "Babbitt", "Arrowsmith", "Trilby", "Zazie", "Momo"]
FOODS = ["peanuts", "shellfish", "sesame", "kiwi", "mustard", "celery", "lupin", "almonds"]
HOBBIES = ["pottery", "bouldering", "sailing", "birdwatching", "salsa dancing", "woodworking", "chess", "calligraphy"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
CN_CITIES = ["上海", "成都", "杭州", "西安", "广州", "南京", "武汉", "厦门"]
CN_SUBJECTS = ["计算机", "经济学", "建筑设计", "新闻传播", "生物医学", "心理学"]

FILLER = {
    "cooking": ["I tried a new {dish} recipe tonight and it came out {adj}.", "Do you think {dish} works with {ingredient}?",
                "My {relation} {name} showed me how to make {dish} last weekend.", "The {ingredient} at the market was {adj} today.",
                "I burned the {dish} again, the oven runs hot.", "Any tips for a {adj} {dish} without {ingredient}?"],
    "weather": ["It has been raining in {city} all week.", "The forecast for {city} says sunny and {adj} on {day}.",
                "I got soaked walking to the station this morning.", "{name} says the winter in {city} was {adj} this year."],
    "work": ["The meeting about the {project} project ran long again.", "My {relation} {name} is stuck on the {project} deadline.",
             "We shipped the {project} release on {day}, finally.", "I have to prepare slides for the {project} review.",
             "Our team is hiring another {job} for the {project} work.", "The office in {city} is moving to a new building."],
    "travel": ["I'm thinking about a weekend trip to {city}.", "Flights to {city} are {adj} in {month}.",
               "{name} just came back from {city} and loved the food.", "Do I need a visa to visit {city}?",
               "The train from {city} took six hours, but the views were {adj}."],
    "sport": ["I went for a run along the river, about {n} kilometres.", "My knee hurts after the {sport} session yesterday.",
              "{name} invited me to play {sport} on {day}.", "Watching the {sport} final with {name} tonight."],
    "films": ["We watched a {adj} documentary about {topic} last night.", "Have you seen the new film about {topic}?",
              "{name} recommended a series about {topic}, it was {adj}.", "The cinema in {city} shows old films on {day}s."],
    "home": ["The heating broke again, the landlord will send someone on {day}.", "I'm repainting the {room} in a {adj} green.",
             "My {relation} {name} helped me move the sofa into the {room}.", "The plants in the {room} need more light."],
    "tech": ["My laptop battery barely lasts two hours now.", "Should I switch my phone to {brand}?",
             "The wifi keeps dropping in the {room}.", "{name} set up a home server for photos."],
}
ANSWERS = ["That sounds {adj}!", "Good to know, thanks for telling me.", "Oh, how did that go?", "I hope it works out.",
           "That makes sense.", "Interesting, tell me more.", "Nice, enjoy it!", "Sorry to hear that.", "Sounds like a plan.",
           "Let me know if you want ideas for {topic}.", "{city} is lovely in {month}."]
SLOTS = {
    "dish": ["risotto", "curry", "lasagna", "ramen", "paella", "dumplings", "tacos", "shakshuka", "pancakes", "soup"],
    "ingredient": ["tomatoes", "coriander", "tofu", "lemons", "ginger", "mushrooms", "spinach", "chickpeas"],
    "adj": ["great", "terrible", "surprisingly good", "cheap", "expensive", "cold", "warm", "beautiful", "strange", "boring"],
    "project": ["billing", "search", "onboarding", "mobile", "analytics", "payments", "reporting", "migration"],
    "day": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"],
    "sport": ["tennis", "football", "basketball", "badminton", "volleyball", "squash"],
    "topic": ["octopuses", "space travel", "ancient Rome", "jazz", "volcanoes", "chess players", "bees", "the deep sea"],
    "room": ["kitchen", "bedroom", "living room", "hallway", "study", "bathroom"],
    "brand": ["Android", "iPhone", "a Pixel", "a Fairphone"],
    "n": ["5", "8", "10", "12", "15"],
}


@dataclass
class Question:
    text: str
    kind: str
    evidence: list[tuple[str, int]]


@dataclass
class Benchmark:
    sessions: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # key -> [(role, text)]
    questions: list[Question] = field(default_factory=list)

    @property
    def messages(self) -> int:
        return sum(len(turns) for turns in self.sessions.values())


def _fill(rng: random.Random, template: str) -> str:
    values = {slot: rng.choice(options) for slot, options in SLOTS.items()}
    values.update(name=rng.choice(NAMES), city=rng.choice(CITIES), relation=rng.choice(RELATIONS), job=rng.choice(JOBS),
                  month=rng.choice(MONTHS))
    return template.format(**values)


def _date(rng: random.Random) -> tuple[int, int, int]:
    return rng.randint(2021, 2025), rng.randint(1, 12), rng.randint(1, 28)


def generate(sessions: int = 50, turns: int = 20, seed: int = 7) -> Benchmark:
    """``sessions`` sessions of ``turns`` user/assistant turns each, with planted facts and questions."""
    rng = random.Random(seed)
    bench = Benchmark()
    keys = [f"chat:{i:03d}" for i in range(sessions)]
    for key in keys:
        topics = rng.sample(sorted(FILLER), 3)
        talk = []
        for _ in range(turns):
            talk.append(("user", _fill(rng, rng.choice(FILLER[rng.choice(topics)]))))
            talk.append(("assistant", _fill(rng, rng.choice(ANSWERS))))
        bench.sessions[key] = talk
    used: set[tuple[str, int]] = set()

    def plant(key: str, text: str, reply: str = "Noted, thanks for telling me.") -> tuple[str, int]:
        talk = bench.sessions[key]
        while True:
            position = 2 * rng.randrange(len(talk) // 2)
            if (key, position) not in used:
                break
        used.add((key, position))
        talk[position], talk[position + 1] = ("user", text), ("assistant", reply)
        return key, position

    def later(first: str) -> str:
        index = keys.index(first)
        return keys[rng.randrange(index + 1, len(keys))] if index + 1 < len(keys) else first

    people = iter(rng.sample(NAMES, len(NAMES)))  # every fact has its own person: no question is ambiguous
    companies, books = iter(rng.sample(COMPANIES, len(COMPANIES))), iter(rng.sample(sorted(set(BOOKS)), len(set(BOOKS))))
    chinese = iter(rng.sample([(w, s) for w in ("妹妹", "哥哥", "表姐", "同事", "邻居") for s in CN_SUBJECTS], 5 * len(CN_SUBJECTS)))
    facts = max(6, sessions * 2)
    for i in range(facts):
        kind = ("single", "temporal", "update", "multi-hop", "distractor", "chinese")[i % 6]
        early = keys[rng.randrange(len(keys) // 2 + 1)]
        relation, city = rng.choice(RELATIONS), rng.choice(CITIES)
        try:
            if kind == "single":
                person = next(people)
                variant = i // 6 % 4
                if variant == 0:
                    breed, pet = rng.choice(BREEDS), rng.choice(PETNAMES)
                    ref = plant(early, f"My {relation} {person} adopted a {breed} puppy and named her {pet}.")
                    question = f"What did {person} name the new puppy?"
                elif variant == 1:
                    food = rng.choice(FOODS)
                    ref = plant(early, f"Heads up for the party: my {relation} {person} is allergic to {food}, even a trace is bad.")
                    question = f"What is {person} allergic to?"
                elif variant == 2:
                    hobby = rng.choice(HOBBIES)
                    ref = plant(early, f"I signed up for a {hobby} class on Thursday evenings with my {relation} {person}.")
                    question = f"What class am I taking with {person}?"
                else:  # a synonym only (relocating / moving): hard for any lexical ranking
                    ref = plant(early, f"My {relation} {person} is relocating to {city} for a new job in the spring.")
                    question = f"Where is {person} moving?"
                bench.questions.append(Question(question, kind, [ref]))
            elif kind == "temporal":
                year, month, day = _date(rng)
                event = rng.choice(["ran my first half marathon", "passed my driving test", "got the keys to the new flat",
                                    "had the surgery on my shoulder", "gave the keynote at the conference"])
                ref = plant(early, f"On {year}-{month:02d}-{day:02d} I {event} in {city}.")
                bench.questions.append(Question(f"What did I do on {MONTHS[month - 1]} {day}, {year}?", kind, [ref]))
            elif kind == "update":
                old, new = next(companies), next(companies)
                job_old, job_new = rng.sample(JOBS, 2)
                plant(early, f"These days I'm working as a {job_old} at {old}.")
                ref = plant(later(early), f"Big news: I left {old} and now work at {new} as a {job_new}.")
                bench.questions.append(Question(f"Where do I work now, after leaving {old}?", kind, [ref]))
            elif kind == "multi-hop":
                person, book = next(people), next(books)
                first = plant(early, f"My {relation} {person} recommended the novel {book} to me, said it was a favourite.")
                second = plant(later(early), f"I finished reading {book} on the flight to {city}, what an ending.")
                bench.questions.append(Question(f"On the way to which city did I finish the book {person} recommended?", kind,
                                                [first, second]))
            elif kind == "distractor":
                person = next(people)
                for _ in range(3):  # the same fact about other people
                    plant(keys[rng.randrange(len(keys))], f"My {rng.choice(RELATIONS)} {next(people)} got a "
                                                          f"{rng.choice(BREEDS)} dog and lives in {rng.choice(CITIES)} now.")
                ref = plant(early, f"My {relation} {person} got a {rng.choice(BREEDS)} dog and lives in {city} now.")
                bench.questions.append(Question(f"What breed is {person}'s dog?", kind, [ref]))
            else:
                who, subject = next(chinese)
                ref = plant(early, f"我{who}下个月要去{rng.choice(CN_CITIES)}读{subject}研究生了。", "太好了，祝顺利！")
                bench.questions.append(Question(f"我{who}要去哪个城市学{subject}？", kind, [ref]))
        except StopIteration:
            break  # out of unique names or companies: enough facts for this size
    return bench
