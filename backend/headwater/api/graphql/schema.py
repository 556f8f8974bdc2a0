"""The GraphQL schema and its Litestar controller at /graphql (GraphiQL on GET, websockets too).

GraphiQL is our own page (graphiql.html) whose assets are served from the package (graphiql.py).
"""

from __future__ import annotations

from strawberry.litestar import make_graphql_controller
from strawberry.schema.config import StrawberryConfig

from headwater.api.graphql.context import LoadersPerOperation, context_getter
from headwater.api.graphql.errors import HeadwaterSchema
from headwater.api.graphql.graphiql import ENDPOINT, graphiql_html
from headwater.api.graphql.limits import limit_extensions
from headwater.api.graphql.mutations import Mutation
from headwater.api.graphql.queries import Query
from headwater.api.graphql.subscriptions import Subscription

schema = HeadwaterSchema(
    query=Query,
    mutation=Mutation,
    subscription=Subscription,
    extensions=[*limit_extensions(), LoadersPerOperation],
    config=StrawberryConfig(disable_field_suggestions=True),
)

_StrawberryController = make_graphql_controller(
    schema,
    path=ENDPOINT,
    context_getter=context_getter,
    keep_alive=True,
    keep_alive_interval=15,
)


class GraphQLController(_StrawberryController):
    """Strawberry's controller, with GraphiQL from the package instead of a CDN."""

    include_in_schema = False  # GraphQL documents itself (schemas/graphql/schema.graphql)

    @property
    def graphql_ide_html(self) -> str:
        return graphiql_html()
