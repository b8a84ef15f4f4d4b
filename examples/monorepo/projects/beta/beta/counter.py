from collections import Counter


def word_counts(text: str) -> dict[str, int]:
    return dict(Counter(text.split()))


def most_common_word(text: str) -> str | None:
    counts = word_counts(text)
    return max(counts, key=counts.__getitem__) if counts else None
