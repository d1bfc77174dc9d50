"""What comes in, before anything is stored: redaction (redaction.py: secrets and, by an
organisation's policy, personal data out of free text, JSON and identifiers) and cleaning
(cleaning.py: every free-text input as the field that reads it states: storable, within its
size, and what becomes of a secret in it). Modules are imported by name
(`from memories.intake import cleaning`); this package re-exports nothing."""
