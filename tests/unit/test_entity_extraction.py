"""Who and what a memory speaks of, found by rules (memories.understanding.entities.extract): no model, no
network, the same answer every time."""

import pytest

from memories.understanding.entities import as_said, extract, first_name_of, name_key, nickname_of, speaker_of


def found(text):
    return [(mention.name, mention.kind) for mention in extract(text)]


@pytest.mark.parametrize("text, expected", [
    ("Caroline: I went to the LGBTQ support group yesterday", [("Caroline", "person")]),
    ("Melanie: thanks Caroline, the kids loved it", [("Melanie", "person"), ("Caroline", "person")]),
    ("Caroline: I moved from Sweden four years ago", [("Caroline", "person"), ("Sweden", "place")]),
    ("My friend Jenny teaches at Lakeside High School", [("Jenny", "person"), ("Lakeside High School", "organization")]),
    ("We drove along Ocean Avenue to Lake Tahoe", [("Ocean Avenue", "place"), ("Lake Tahoe", "place")]),
    ("John volunteers with the Red Cross", [("John", "person"), ("Red Cross", "organization")]),
    ("Caroline's painting won", [("Caroline", "person")]),
])
def test_names_and_what_they_name(text, expected):
    assert found(text) == expected


def test_dates_and_quantities():
    assert found("We raised $1,500 on 8 May, 2023 with 3 kids, and ran 10 km in June 2023") == [
        ("2023-05-08", "date"), ("2023-06", "date"), ("$1500", "quantity"), ("3 kids", "quantity"),
        ("10 km", "quantity")]


def test_a_word_opening_a_sentence_counts_only_if_the_namespace_knows_it():
    mentions = {mention.name: mention.known_only for mention in extract("Painting is fun. Oscar chewed it, said Mel")}
    assert mentions == {"Painting": True, "Oscar": True, "Mel": False}


@pytest.mark.parametrize("text", ["I think so. OK, thanks!", "Hey! Wow, great news", "it may rain in May",
                                  "the NASA and LGBTQ groups"])
def test_words_that_name_nothing(text):
    assert [name for name, kind in found(text) if kind != "date"] == []


def test_keys_fold_case_possessives_and_punctuation():
    assert name_key("  Caroline's ") == "caroline" == name_key("CAROLINE")
    assert name_key("Lake  Tahoe.") == "lake tahoe"


def test_a_short_name_is_the_start_of_a_first_name_of_three_letters_or_more():
    assert nickname_of("mel", "melanie") and nickname_of("mel", "melanie smith")
    assert not nickname_of("me", "melanie") and not nickname_of("melanie", "melanie")
    assert not nickname_of("ann", "joanne") and not nickname_of("mel smith", "melanie")


# --------------------------------------------------------------------------- who speaks (issue 34)


@pytest.mark.parametrize("text, speaker", [
    ("Melanie: I went camping", "Melanie"),
    ("Melanie said: I went camping", "Melanie"),
    ("Melanie said, I went camping", "Melanie"),
    ("Melanie said she went camping", "Melanie"),
    ("Melanie wrote: I went camping", "Melanie"),
    ("Melanie asked: how was it?", "Melanie"),
    ("[Melanie] I went camping", "Melanie"),
    ("[Melanie]: I went camping", "Melanie"),
    ("<Melanie> I went camping", "Melanie"),
    ("Melanie - I went camping", "Melanie"),
    ("Melanie — I went camping", "Melanie"),
    ("**Melanie**: I went camping", "Melanie"),
    ("**Melanie:** I went camping", "Melanie"),
    ("Melanie (10:32): I went camping", "Melanie"),
    ("Melanie (8 May): I went camping", "Melanie"),
    ("[10:32] Melanie: I went camping", "Melanie"),
    ("[10:32 PM] Melanie: I went camping", "Melanie"),
    ("[2023-05-08 10:32] Melanie: I went camping", "Melanie"),
    ("10:32 - Melanie: I went camping", "Melanie"),
    ("8/5/23, 10:32 PM - Melanie: I went camping", "Melanie"),  # a chat app's export
    ("2023-05-08 10:32 - Melanie: I went camping", "Melanie"),
    ("08.05.2023, 10:32 - Melanie: I went camping", "Melanie"),
    ('"I went camping," said Melanie.', "Melanie"),  # prose: the quotation, then who said it
    ("“I went camping,” Melanie said", "Melanie"),
    ("> Melanie: I went camping", "Melanie"),
    ("> > Melanie wrote: I went camping", "Melanie"),
    ("Melanie Smith: I went camping", "Melanie Smith"),
    ("Dr Patel: take two a day", "Dr Patel"),
    ("  Melanie:I went camping", "Melanie"),
])
def test_the_speaker_of_a_transcript_line_in_its_common_shapes(text, speaker):
    mentions = extract(text)
    assert [(mention.name, mention.kind) for mention in mentions if mention.speaker] == [(speaker, "person")]
    assert speaker_of(text)[0] == speaker
    assert "camping" not in speaker_of(text)[0]


@pytest.mark.parametrize("text", [
    "Note: buy milk", "Update: the meeting moved", "Re: your message", "Fwd: the invoice", "Subject: dinner",
    "TODO: call the vet", "Summary: all good", "User: hello", "Assistant: how can I help?", "System: be brief",
    "Q: what time?", "PS: bring snacks", "FAQ: opening hours", "Reminder - the vet at 5", "Dr: take two",
    "https://example.com is down", "I said: no", "We said goodbye", "Hey Bob: look", "Good Morning: coffee",
    "Tuesday: gym", "The team met at 10:30: fine", "Paris is lovely in May", "Melanie went camping",
    "melanie: lower case is no name", 'She said "hi" to Melanie.', '"Hello," said the man.',
    '"Hello," said Melanie, smiling at us.',
])
def test_a_label_a_role_or_a_plain_sentence_has_no_speaker(text):
    assert speaker_of(text) is None
    assert not any(mention.speaker for mention in extract(text))


def test_a_quotation_attributed_after_it_is_the_speakers_and_names_inside_it_are_mentioned():
    mentions = extract('"I went camping with Caroline," said Dr Patel.')
    assert [(mention.name, mention.speaker) for mention in mentions] == [("Dr Patel", True), ("Caroline", False)]


@pytest.mark.parametrize("text", [
    "Melanie: I went camping", "8/5/23, 10:32 PM - Melanie: I went camping", "2023-05-08 10:32 - Melanie: I went camping",
    "[10:32] Melanie: I went camping", "[8/5/23, 10:32:07] Melanie: I went camping", "**Melanie**: I went camping",
    "<Melanie> I went camping", "[Melanie] I went camping", "Melanie (10:32): I went camping",
    "Melanie (8/5/23, 10:32 PM): I went camping", "> Melanie wrote: I went camping", "Melanie said: I went camping",
    '"I went camping," said Melanie.', "“I went camping,” Melanie said", "Melanie:   I went camping  ",
])
def test_a_transcript_line_is_embedded_as_name_and_words_whatever_its_shape(text):
    assert as_said(text) == "Melanie: I went camping"


@pytest.mark.parametrize("text", [
    "Paris - a city I love", "Rome said goodbye to its emperors", "Note: buy milk", "User: hello",
    "Budget (2024): five thousand", "Melanie went camping", "Melanie:", "I went camping.\n",
    '"Did you?" asked the man.', "The team met at 10:30: fine",
])
def test_what_is_no_speakers_line_is_embedded_as_written(text):
    assert as_said(text) == text


def test_each_line_of_a_transcript_is_written_one_way():
    assert as_said('8/5/23, 10:32 PM - Melanie: I went camping\n"Where?" Caroline asked.\nnot a line\n') == (
        "Melanie: I went camping\nCaroline: Where?\nnot a line\n")
    assert as_said('"Did you?" Caroline asked.') == "Caroline: Did you?"  # ? and ! stay; a comma before said goes
    assert as_said('“She said "no",” said Dr Patel.') == 'Dr Patel: She said "no"'  # quotes inside stay


@pytest.mark.parametrize("text, expected", [
    # issue 33: a single name after "at", or any after a word of work, is where someone works
    ("Caroline: I work at Siemens now", [("Caroline", "person"), ("Siemens", "organization")]),
    ("Bob works for Acme Robotics", [("Bob", "person"), ("Acme Robotics", "organization")]),
    ("She joined Initech last year", [("Initech", "organization")]),
    ("We met at Starbucks", [("Starbucks", "organization")]),
    # places stay places: "in", "from", "to", and a name ending in a word of place after "at"
    ("I live in Munich", [("Munich", "place")]),
    ("We moved from Sweden to Norway", [("Sweden", "place"), ("Norway", "place")]),
    ("We had a picnic at Central Park", [("Central Park", "place")]),
])
def test_organisations_after_at_or_a_word_of_work_and_places_after_in(text, expected):
    assert found(text) == expected


def test_a_first_name_alone_is_the_first_word_of_a_full_name():
    assert first_name_of("bob", "bob smith") and not first_name_of("bob", "bob")
    assert not first_name_of("bob smith", "bob smith jr") and not first_name_of("rob", "bob smith")
