"""Plain-language paragraphs for the report: what each privacy model protects against and what
it does not, written for a reader who signs off a release, not for a statistician.

The texts belong to the models' owners; until each model class carries its own, they live in
one table here, keyed by the model's class name (:data:`MODEL_TEXTS`), with a default for a
model the table does not know (:data:`DEFAULT_TEXT`).

>>> from ldiv_polars.models import KAnonymity
>>> "homogeneity" in plain_text(KAnonymity(5))
True
>>> plain_text(object()) == DEFAULT_TEXT
True
"""

from __future__ import annotations

_MINIMALITY = (
    " Caution (minimality attack): an attacker who knows the anonymization algorithm chose the "
    "least generalization that satisfies the model can sometimes rule out values a class was "
    "generalized to hide; `ldiv attack` measures this on a release."
)

MODEL_TEXTS: dict[str, str] = {
    "KAnonymity": (
        "k-anonymity: every combination of quasi-identifier values (age, sex, postcode, ...) is "
        "shared by at least k records, so a person known to be in the data cannot be singled out "
        "to fewer than k records from those attributes alone. It does NOT protect the sensitive "
        "value: if all k records of a class have the same diagnosis (homogeneity attack), or the "
        "attacker knows enough to exclude the others (background-knowledge attack), the value is "
        "disclosed without identifying the record."
    ),
    "DistinctLDiversity": (
        "Distinct l-diversity: every class holds at least l different sensitive values, which "
        "stops the homogeneity attack of k-anonymity. It does NOT bound how likely each value "
        "is: a class with 98 'flu' and one each of two other values passes with l = 3, yet "
        "anyone in it has the flu with 98% confidence (skewness attack); nor does it consider "
        "values that are semantically close (three kinds of cancer are three values)."
        + _MINIMALITY
    ),
    "EntropyLDiversity": (
        "Entropy l-diversity: the sensitive values of every class are spread at least as evenly "
        "as l equally likely values (entropy >= ln l), so no value dominates a class. It needs "
        "the whole table to be diverse enough, may be impossible when one value is very common, "
        "and does NOT treat similar values (e.g. different cancers) as one." + _MINIMALITY
    ),
    "RecursiveCLDiversity": (
        "Recursive (c,l)-diversity: in every class the most frequent sensitive value is less "
        "common than c times the l-th most frequent value and all rarer ones together (r1 < "
        "c (r_l + ... + r_m)), so an attacker who can rule out l-2 values still cannot infer "
        "the remaining one with confidence; l = 1 asks nothing (the paper's definition says "
        "1-diversity always holds). It does "
        "NOT protect against an attacker who already knows much about the person, or against "
        "inference from semantically similar values." + _MINIMALITY
    ),
    "PositiveDisclosureRecursive": (
        "Positive-disclosure-recursive (c,l)-diversity: like recursive (c,l)-diversity, but "
        "values that are harmless to disclose (the don't-care set, e.g. 'healthy') may be "
        "frequent. It protects the listed sensitive values only; disclosing a don't-care value "
        "is accepted by design." + _MINIMALITY
    ),
    "NegativePositiveDisclosureRecursive": (
        "Negative/positive-disclosure-recursive (c1,c2,l)-diversity: positive-disclosure "
        "protection plus a guarantee that chosen values (W) each make up at least c2 percent of "
        "every class, so an attacker cannot conclude a person does NOT have them. Values outside "
        "W and the don't-care set have no negative-disclosure guarantee." + _MINIMALITY
    ),
    "EntropyLDiversityDontCare": (
        "Entropy l-diversity with don't-care values (adjusted entropy): entropy l-diversity in "
        "which harmless values may dominate a class. Protects the sensitive values only; a "
        "don't-care value may be disclosed." + _MINIMALITY
    ),
    "MultiAttribute": (
        "Multi-attribute l-diversity: the inner model holds for each sensitive column even when "
        "the other sensitive columns are treated as quasi-identifiers, so knowing one sensitive "
        "value of a person does not break the protection of another. It inherits the limits of "
        "the inner model."
    ),
    "AlphaKAnonymity": (
        "(alpha,k)-anonymity: every class has at least k records and no sensitive value makes up "
        "more than a share alpha of a class, which bounds the confidence of an attacker who "
        "links a person to a class. It does NOT consider the table's overall distribution (a "
        "value common everywhere is not protected more) nor similar values."
    ),
    "TCloseness": (
        "t-closeness: the distribution of sensitive values in every class is within distance t "
        "(Earth Mover's Distance) of the whole table's, so learning a person's class teaches an "
        "attacker little beyond what the published table as a whole shows. It limits the "
        "information gained, not the information present: if the table shows 30% of people "
        "have a condition, everybody is exposed to that 30%. Small t costs much utility."
    ),
    "DeltaDisclosure": (
        "delta-disclosure privacy: for every class and every sensitive value, the class "
        "frequency differs from the table frequency by less than a factor e^delta in either "
        "direction, which bounds both positive and negative disclosure. Every value of the table "
        "must occur in every class, which is often costly."
    ),
    "BetaLikeness": (
        "beta-likeness: no sensitive value is more than (1 + beta) times as frequent in a class "
        "as in the table, which bounds the relative gain in confidence of an attacker for every "
        "value, rare values included. It does not bound decreases in confidence (negative "
        "disclosure)."
    ),
    "BinaryLDiversity": (
        "Binary l-diversity: at most a share 1/l of every class carries a positive (sensitive) "
        "value, so a person's positive status is disclosed with confidence at most 1/l. Only the "
        "listed positive values are protected."
    ),
    "AverageRisk": (
        "Average re-identification risk: an attacker who knows a person is in the table and "
        "picks one record of the person's class at random is right, on average over the "
        "records, at most r of the time (classes / records). It is an average: records in "
        "small classes can still be at high risk, and it says nothing about what the "
        "sensitive values disclose."
    ),
    "SampleUniques": (
        "Sample uniques: at most a share x of the records are alone in their class, the records "
        "most exposed to re-identification. A record that is not unique in the table may still "
        "be unique in the population, and no protection of the sensitive values is implied."
    ),
    "PopulationUniques": (
        "Population uniques: the share of the population's records that are unique on the "
        "quasi-identifiers, estimated from the sample by a statistical model, is at most x. It "
        "is an estimate (its model's assumptions may not hold for this population), an average "
        "over records, and it does not protect the sensitive values."
    ),
    "KMap": (
        "k-map: each record's class is expected to match at least k people of the population "
        "(estimated from the sampling fraction, so the table only needs classes of k' records). "
        "It protects against re-identification by an attacker with a population register; it "
        "rests on the estimate and, like k-anonymity, does not stop the homogeneity attack."
    ),
    "KMapPopulation": (
        "k-map against a population table: each class of the released sample matches at least "
        "k records of the given population table, so an attacker who links the release with "
        "that population register finds at least k candidates. It is only as good as the "
        "population table, and does not stop the homogeneity attack."
    ),
    "DeltaPresence": (
        "delta-presence: the released table is a research subset of a population table, and "
        "for every class the share of its population records that are in the subset lies "
        "between delta_min and delta_max, so an attacker learns whether a person of the "
        "population is in the subset with confidence at most delta_max. It protects "
        "membership, not the sensitive values."
    ),
    "WeightedKAnonymity": (
        "k-anonymity on sampling weights: every class's estimated population size (the sum of "
        "its records' sampling weights, F_k) is at least k, so each released combination of "
        "quasi-identifiers stands for at least k people of the population. It is only as good "
        "as the weights, may pass classes of a single record, and does not stop the "
        "homogeneity attack."
    ),
}
"""Plain-language text per model class name."""

DEFAULT_TEXT = (
    "This model has no plain-language description yet: see the library's documentation "
    "(docs/models.md) for its definition. A privacy model bounds what an attacker can learn "
    "under its own assumptions; check that they match the attackers you expect."
)
"""The text of a model :data:`MODEL_TEXTS` does not know."""


def plain_text(model: object) -> str:
    """The plain-language paragraph of ``model`` (by its class name; :data:`DEFAULT_TEXT` for
    a model the table does not know)."""
    return MODEL_TEXTS.get(type(model).__name__, DEFAULT_TEXT)
