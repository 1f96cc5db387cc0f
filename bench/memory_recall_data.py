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
