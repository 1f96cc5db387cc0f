"""Data of the prefilter recall bench (``bench_memory.py --recall``): stored memories, each
with a restatement in other words and an update, English and Chinese.

Each case: (stored merge key, stored text, restated, updated, the key a model would name the
restated/updated fact by on its own, without the catalogue of stored keys). The model's own key
is the pessimistic case of the real commit flow: there the extraction prompt lists the stored
keys, so a model that reuses one gives an exact key hit, which the prefilter always shows.

``ORIGINAL`` is the set the prefilter was first measured on; ``HELD_OUT`` was written before
any of the changes tuned on ``ORIGINAL`` (recall is reported on both; do not tune on it).
"""

from __future__ import annotations

ORIGINAL = [
    ("flight seat", "The user wants window seats on flights.", "Aisle seat when flying, please.",
     "The user now wants aisle seats on planes.", "seat preference"),
    ("morning coffee", "The user drinks espresso every morning.", "Coffee: a short black one at breakfast.",
     "Switched from espresso to oat latte.", "breakfast drink"),
    ("editor theme", "The user's editor theme is dark.", "Prefers a dark colour scheme in the IDE.",
     "Editor theme changed to light.", "ide colors"),
    ("home city", "The user lives in Munich.", "Home is in Bavaria's capital.", "Moved from Munich to Berlin.",
     "home"),
    ("test runner", "The user runs tests with pytest.", "Uses py.test as the test runner.", "Test runner is now nox.",
     "testing tool"),
    ("team size", "The user's team has four engineers.", "Four developers on the squad.",
     "The team grew to six engineers.", "team"),
    ("allergies", "The user is allergic to peanuts.", "Cannot eat nuts: allergy.", "Peanut allergy is mild now.",
     "food allergy"),
    ("daughter", "The user's daughter is named Mia.", "Has a girl called Mia.", "Mia, the daughter, turned seven.",
     "children"),
    ("contact channel", "The user prefers email over phone calls.", "Rather be contacted by mail than rung up.",
     "Now prefers chat over email.", "contact preference"),
    ("laptop", "The user's laptop is a ThinkPad X1.", "Works on a Lenovo notebook.",
     "Replaced the ThinkPad with a MacBook.", "computer"),
    ("座位偏好", "用户坐飞机时喜欢靠窗的座位。", "乘机偏好：窗边位置。", "用户现在坐飞机喜欢靠过道的座位。", "乘机座位"),
    ("早餐咖啡", "用户每天早上喝意式浓缩咖啡。", "早餐时来一杯浓缩。", "用户改喝燕麦拿铁了。", "早餐饮品"),
    ("居住城市", "用户住在慕尼黑。", "家在巴伐利亚首府。", "用户从慕尼黑搬到了柏林。", "住址"),
    ("编辑器主题", "用户的编辑器主题是深色。", "IDE 用暗色配色。", "编辑器主题换成了浅色。", "配色"),
    ("过敏", "用户对花生过敏。", "不能吃坚果，会过敏。", "花生过敏现在比较轻。", "食物过敏"),
    ("女儿", "用户的女儿叫米娅。", "有个女孩叫米娅。", "女儿米娅七岁了。", "孩子"),
]

HELD_OUT = [
    ("favourite language", "The user's favourite programming language is Rust.", "Mostly codes in Rust these days; loves it.",
     "Favourite language switched from Rust to Zig.", "preferred language"),
    ("commute", "The user commutes to work by bicycle.", "Cycles to the office every day.",
     "Now takes the train to work instead of biking.", "transport to work"),
    ("diet", "The user is vegetarian.", "Does not eat meat.", "The user became vegan last month.", "diet"),
    ("manager", "The user's manager is called Priya.", "Reports to Priya.", "New boss: Tom replaced Priya.", "boss"),
    ("deploy day", "The user deploys on Fridays.", "Friday is deployment day.", "Deployment moved to Thursdays.",
     "release day"),
    ("dog", "The user's dog is a beagle named Max.", "Has a beagle, Max.", "Max the dog passed away.", "pet"),
    ("indentation", "The user prefers tabs for indentation.", "Indents code with tab characters.",
     "Switched to four spaces for indenting.", "indent style"),
    ("work location", "The user works remotely from Lisbon.", "Remote job, based in Portugal's capital.",
     "Relocated from Lisbon to Porto.", "location"),
    ("phone", "The user's phone is a Pixel 8.", "Carries a Google Pixel.", "Upgraded the Pixel 8 to an iPhone 15.",
     "mobile phone"),
    ("languages spoken", "The user speaks German and French.", "Fluent in French; German too.",
     "Now learning Spanish besides German and French.", "spoken languages"),
    ("编辑器", "用户喜欢用 Vim 编辑代码。", "写代码时偏爱 Vim。", "编辑器从 Vim 换成了 VS Code。", "代码编辑器"),
    ("发布日", "用户每周五发布版本。", "周五是上线日。", "发布日改到周四了。", "上线时间"),
    ("宠物狗", "用户养了一只叫旺财的狗。", "家里的狗叫旺财。", "旺财已经十岁了。", "宠物"),
    ("饮食", "用户是素食者。", "不吃肉。", "用户现在吃纯素。", "饮食习惯"),
    ("工作城市", "用户在上海工作。", "办公地点在上海。", "用户从上海调到了深圳。", "办公城市"),
    ("经理", "用户的经理是王芳。", "直属领导叫王芳。", "新经理换成了李明。", "领导"),
]

FILLER = ["The user keeps the {} service on call rotation.", "The user reviewed the {} migration plan.",
          "The user asked about {} pricing tiers.", "用户在维护{}服务。", "用户问过{}的价格。"]
FILLER_TOPICS = ["billing", "search", "auth", "payments", "analytics", "gateway", "mail", "storage", "cdn", "queue",
                 "ledger", "crm", "export", "import", "audit", "metrics", "logs", "alerts", "backup", "identity"]

TERMS_NOTE = """The retrieval terms a model would write for each text on its own (the extraction prompt's
"terms": other names, synonyms, the broader term, the key words in English and in the user's
language), written for every stored text, restatement, update and filler from that text alone,
without looking at its pair: a scripted model, labelled so wherever it is reported."""

TERMS: dict[str, list[str]] = {
    # ORIGINAL
    "The user wants window seats on flights.": ["window seat", "seat preference", "airplane seat", "flying", "air travel"],
    "Aisle seat when flying, please.": ["aisle seat", "seat preference", "flight", "airplane", "air travel"],
    "The user now wants aisle seats on planes.": ["aisle seat", "seat preference", "flight", "airplane", "air travel"],
    "The user drinks espresso every morning.": ["coffee", "espresso", "morning routine", "breakfast drink", "caffeine"],
    "Coffee: a short black one at breakfast.": ["espresso", "black coffee", "breakfast drink", "morning coffee", "caffeine"],
    "Switched from espresso to oat latte.": ["coffee", "latte", "oat milk", "espresso", "coffee preference"],
    "The user's editor theme is dark.": ["dark mode", "color scheme", "editor theme", "IDE", "appearance"],
    "Prefers a dark colour scheme in the IDE.": ["dark mode", "dark theme", "editor theme", "color scheme", "IDE"],
    "Editor theme changed to light.": ["light mode", "light theme", "color scheme", "IDE", "editor"],
    "The user lives in Munich.": ["München", "Bavaria", "Germany", "home city", "residence"],
    "Home is in Bavaria's capital.": ["Munich", "München", "Bavaria", "Germany", "home city", "residence"],
    "Moved from Munich to Berlin.": ["relocation", "home city", "Berlin", "Munich", "Germany", "residence"],
    "The user runs tests with pytest.": ["test runner", "Python testing", "unit tests", "pytest", "py.test"],
    "Uses py.test as the test runner.": ["pytest", "test runner", "Python testing", "unit tests"],
    "Test runner is now nox.": ["nox", "test runner", "Python testing", "test automation", "tests"],
    "The user's team has four engineers.": ["team size", "developers", "engineering team", "headcount", "4"],
    "Four developers on the squad.": ["team size", "engineers", "team", "headcount", "4"],
    "The team grew to six engineers.": ["team size", "developers", "headcount", "hiring", "6"],
    "The user is allergic to peanuts.": ["peanut allergy", "nut allergy", "food allergy", "allergies", "diet"],
    "Cannot eat nuts: allergy.": ["nut allergy", "peanuts", "food allergy", "allergies", "diet"],
    "Peanut allergy is mild now.": ["peanut allergy", "nut allergy", "food allergy", "allergies"],
    "The user's daughter is named Mia.": ["child", "children", "family", "kid", "Mia"],
    "Has a girl called Mia.": ["daughter", "child", "children", "family", "Mia"],
    "Mia, the daughter, turned seven.": ["child", "birthday", "age", "family", "Mia"],
    "The user prefers email over phone calls.": ["contact preference", "communication", "e-mail", "phone", "mail"],
    "Rather be contacted by mail than rung up.": ["email", "contact preference", "communication", "phone calls"],
    "Now prefers chat over email.": ["contact preference", "messaging", "communication", "chat", "email"],
    "The user's laptop is a ThinkPad X1.": ["Lenovo", "notebook", "computer", "laptop", "ThinkPad"],
    "Works on a Lenovo notebook.": ["laptop", "ThinkPad", "computer", "Lenovo"],
    "Replaced the ThinkPad with a MacBook.": ["laptop", "Lenovo", "Apple", "computer", "notebook"],
    "用户坐飞机时喜欢靠窗的座位。": ["靠窗座位", "座位偏好", "航班", "乘机", "window seat", "flight"],
    "乘机偏好：窗边位置。": ["靠窗座位", "座位偏好", "飞机", "航班", "window seat"],
    "用户现在坐飞机喜欢靠过道的座位。": ["过道座位", "座位偏好", "航班", "乘机", "aisle seat"],
    "用户每天早上喝意式浓缩咖啡。": ["咖啡", "浓缩咖啡", "早餐", "espresso", "coffee"],
    "早餐时来一杯浓缩。": ["浓缩咖啡", "咖啡", "早上", "espresso", "coffee"],
    "用户改喝燕麦拿铁了。": ["咖啡", "拿铁", "燕麦奶", "latte", "coffee"],
    "用户住在慕尼黑。": ["居住城市", "巴伐利亚", "德国", "Munich", "家"],
    "家在巴伐利亚首府。": ["慕尼黑", "居住城市", "德国", "Munich", "Bavaria"],
    "用户从慕尼黑搬到了柏林。": ["搬家", "居住城市", "德国", "Berlin", "Munich"],
    "用户的编辑器主题是深色。": ["深色模式", "配色", "暗色主题", "IDE", "dark theme"],
    "IDE 用暗色配色。": ["深色主题", "编辑器主题", "暗色模式", "dark theme", "配色方案"],
    "编辑器主题换成了浅色。": ["浅色模式", "配色", "IDE", "light theme", "编辑器"],
    "用户对花生过敏。": ["食物过敏", "坚果过敏", "花生", "peanut allergy", "饮食"],
    "不能吃坚果，会过敏。": ["坚果过敏", "食物过敏", "花生", "nut allergy", "饮食"],
    "花生过敏现在比较轻。": ["食物过敏", "坚果过敏", "peanut allergy", "过敏"],
    "用户的女儿叫米娅。": ["孩子", "子女", "家人", "Mia", "daughter"],
    "有个女孩叫米娅。": ["女儿", "孩子", "家人", "Mia", "daughter"],
    "女儿米娅七岁了。": ["孩子", "年龄", "生日", "Mia", "daughter"],
    # HELD_OUT
    "The user's favourite programming language is Rust.": ["Rust", "programming language", "coding", "favorite language"],
    "Mostly codes in Rust these days; loves it.": ["programming language", "favourite language", "Rust", "coding"],
    "Favourite language switched from Rust to Zig.": ["programming language", "Zig", "Rust", "coding"],
    "The user commutes to work by bicycle.": ["cycling", "bike", "commute", "transport"],
    "Cycles to the office every day.": ["bicycle", "bike", "commute", "work", "transport"],
    "Now takes the train to work instead of biking.": ["commute", "train", "public transport", "bicycle", "cycling"],
    "The user is vegetarian.": ["diet", "no meat", "meat-free", "vegetarianism", "food"],
    "Does not eat meat.": ["vegetarian", "diet", "meat-free", "food"],
    "The user became vegan last month.": ["diet", "vegan", "plant-based", "vegetarian", "food"],
    "The user's manager is called Priya.": ["boss", "supervisor", "reports to", "Priya", "work"],
    "Reports to Priya.": ["manager", "boss", "supervisor", "Priya"],
    "New boss: Tom replaced Priya.": ["manager", "supervisor", "Tom", "Priya", "work"],
    "The user deploys on Fridays.": ["deployment", "release day", "Friday", "shipping", "release"],
    "Friday is deployment day.": ["deploy", "release day", "release", "Friday"],
    "Deployment moved to Thursdays.": ["deploy", "release day", "release", "Thursday", "schedule"],
    "The user's dog is a beagle named Max.": ["pet", "dog", "beagle", "Max"],
    "Has a beagle, Max.": ["dog", "pet", "Max", "beagle"],
    "Max the dog passed away.": ["pet", "dog", "death", "Max"],
    "The user prefers tabs for indentation.": ["indent style", "tabs", "code formatting", "whitespace"],
    "Indents code with tab characters.": ["indentation", "tabs", "code formatting", "indent style"],
    "Switched to four spaces for indenting.": ["indentation", "spaces", "code formatting", "indent style"],
    "The user works remotely from Lisbon.": ["remote work", "Portugal", "location", "Lisboa", "home office"],
    "Remote job, based in Portugal's capital.": ["Lisbon", "Lisboa", "Portugal", "remote work", "location"],
    "Relocated from Lisbon to Porto.": ["relocation", "Portugal", "location", "Lisbon", "Porto"],
    "The user's phone is a Pixel 8.": ["Google Pixel", "smartphone", "Android", "mobile phone"],
    "Carries a Google Pixel.": ["phone", "smartphone", "Android", "mobile"],
    "Upgraded the Pixel 8 to an iPhone 15.": ["phone", "smartphone", "Apple", "mobile", "Pixel"],
    "The user speaks German and French.": ["languages", "spoken languages", "multilingual", "German", "French"],
    "Fluent in French; German too.": ["languages", "speaks", "multilingual", "French", "German"],
    "Now learning Spanish besides German and French.": ["languages", "Spanish", "language learning", "multilingual"],
    "用户喜欢用 Vim 编辑代码。": ["代码编辑器", "编辑器", "Vim", "editor", "IDE"],
    "写代码时偏爱 Vim。": ["编辑器", "代码编辑器", "Vim", "editor"],
    "编辑器从 Vim 换成了 VS Code。": ["代码编辑器", "VS Code", "Vim", "editor", "IDE"],
    "用户每周五发布版本。": ["发布日", "上线", "部署", "周五", "release day"],
    "周五是上线日。": ["发布", "部署", "发布日", "星期五", "release day"],
    "发布日改到周四了。": ["发布", "上线", "部署", "周四", "release day"],
    "用户养了一只叫旺财的狗。": ["宠物", "狗", "小狗", "旺财", "dog", "pet"],
    "家里的狗叫旺财。": ["宠物", "养狗", "旺财", "dog", "pet"],
    "旺财已经十岁了。": ["宠物", "狗", "年龄", "旺财", "pet"],
    "用户是素食者。": ["饮食", "不吃肉", "素食", "vegetarian", "diet"],
    "不吃肉。": ["素食", "素食者", "饮食", "vegetarian", "diet"],
    "用户现在吃纯素。": ["饮食", "纯素", "素食", "vegan", "diet"],
    "用户在上海工作。": ["工作地点", "办公城市", "上海", "Shanghai", "work location"],
    "办公地点在上海。": ["工作城市", "工作地点", "上海", "Shanghai"],
    "用户从上海调到了深圳。": ["工作调动", "工作城市", "深圳", "Shenzhen", "上海"],
    "用户的经理是王芳。": ["领导", "上司", "主管", "王芳", "manager"],
    "直属领导叫王芳。": ["经理", "上司", "主管", "王芳", "manager"],
    "新经理换成了李明。": ["领导", "上司", "李明", "manager", "boss"],
}

FILLER_TERMS = [["on-call", "pager duty", "operations", "service ownership"], ["migration", "code review", "planning"],
                ["pricing", "price plans", "cost"], ["维护", "运维", "服务", "maintenance"], ["价格", "定价", "费用", "pricing"]]
"""Per ``FILLER`` template: the terms its text gives whatever the topic (the topic's own are in ``TOPIC_TERMS``)."""
TOPIC_TERMS = {"billing": ["invoicing"], "search": ["lookup"], "auth": ["authentication", "login"],
               "payments": ["payment processing"], "analytics": ["reporting"], "gateway": ["API gateway"],
               "mail": ["email"], "storage": ["disk"], "cdn": ["content delivery"], "queue": ["message queue"],
               "ledger": ["accounting"], "crm": ["customer relationship"], "export": ["data export"],
               "import": ["data import"], "audit": ["audit log"], "metrics": ["monitoring"], "logs": ["logging"],
               "alerts": ["alerting"], "backup": ["backups"], "identity": ["identity management"]}


def terms_of(text: str) -> list[str]:
    """The scripted model's retrieval terms for a case text (every one has them: KeyError otherwise)."""
    return TERMS[text]


def filler_terms(template: int, topic: str) -> list[str]:
    """The scripted model's retrieval terms for a filler text."""
    return [*FILLER_TERMS[template], topic, *TOPIC_TERMS[topic]]
