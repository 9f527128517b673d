"""The pure model: QIs and their encoded domains, hierarchies, frequency-group statistics,
constraints, criteria, selections and the numeric kernels. Nothing here touches a database."""
