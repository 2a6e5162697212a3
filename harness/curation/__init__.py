"""Labels and curation (floor 6): labels a person gives, promotion into the dataset store,
synthetic drafts, judge validation and rubric benchmarks. Empty on purpose."""
