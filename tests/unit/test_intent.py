"""A query's intent (memories.understanding.intent), read by rules."""

import pytest

from memories.understanding.intent import classify


@pytest.mark.parametrize("query, intent", [
    ("Why did Caroline move to Sweden?", "why"),
    ("how come the deploy failed", "why"),
    ("What made Melanie start painting?", "why"),
    ("What was the reason for the delay?", "why"),
    ("When did Melanie go camping?", "when"),
    ("What year did John start his job?", "when"),
    ("How long ago was Caroline's birthday?", "when"),
    ("Who did Maria have dinner with?", "who"),
    ("Whose dog is Oscar?", "who"),
    ("Where did Caroline move from?", "where"),
    ("How did John get to the concert?", "how"),
    ("How many kids does Melanie have?", "what"),
    ("What are Caroline's hobbies?", "what"),
    ("and so, when is the meeting", "when"),
    ("tea preferences", "general"),
])
def test_each_question_word_has_its_intent(query, intent):
    assert classify(query) == intent
