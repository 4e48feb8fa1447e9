"""Knowledge of English words that does not depend on any vault: WordNet's synonyms (the search looks for
them when a query word is one the vault never uses) and whether a word is a dictionary word at all (a word
that is not, spelled as a note's title, names that note)."""

from ._wordnet import is_word, synonyms

__all__ = ["is_word", "synonyms"]
