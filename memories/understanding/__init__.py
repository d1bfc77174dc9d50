"""What a text or a query says, read by rules and statistics, without a model: what a query
asks for (intent), the period it names (when), who and what it mentions (entities), a word's
other forms (forms), and each tenant's word statistics that BM25 ranks by (lexicon)."""
