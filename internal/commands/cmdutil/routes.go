package cmdutil

import (
	"errors"

	"github.com/timelake/timelake/internal/route"
	"github.com/timelake/timelake/internal/settings"
	"github.com/timelake/timelake/internal/tablename"
)

// TableOrRoutes reads the routes (--route, TIMELAKE_ROUTES) and, without
// them, the table, which is then required (RoutesErr tells it missing).
// Errors: a usage error for routes beside --table or TIMELAKE_TABLE.
func TableOrRoutes(r *settings.Resolver) (tablename.Name, route.Routes, error) {
	routes, err := RoutesNotTable(r)
	if err != nil || len(routes) > 0 {
		return tablename.Name{}, routes, err
	}
	return settings.Table.Require(r), nil, nil
}

// RoutesNotTable reads the routes (--route, TIMELAKE_ROUTES) of a command
// that takes them instead of a table, none when not given. Errors: a
// usage error for routes beside --table or TIMELAKE_TABLE.
func RoutesNotTable(r *settings.Resolver) (route.Routes, error) {
	routes := settings.Routes.Get(r)
	if len(routes) == 0 {
		return nil, nil
	}
	if from := r.Lookup(&settings.Table.Spec); from.Source != "" {
		return nil, UsageErrorf("%s and the routes (%s) both name tables: give either one table or routes, not both (docs/routing.md)",
			from.Describe(), routes)
	}
	return routes, nil
}

// RoutesErr is r.Err() of a command that takes a table or routes
// (TableOrRoutes): a missing table says that routes would do as well.
func RoutesErr(r *settings.Resolver) error {
	err := r.Err()
	var missing *settings.MissingError
	if errors.As(err, &missing) && missing.Spec == &settings.Table.Spec {
		missing.Otherwise = "pass --route or set TIMELAKE_ROUTES for several tables (docs/routing.md)"
	}
	return err
}

// RouteResolvers reads the table settings of each route whose rule has
// options (docs/routing.md, "Table defaults per route"): read sets them
// on a copy of base from the route's resolver (settings.Resolver.ForRoute:
// its options over r), and check refuses those that do not go together.
// Each route is read and checked here, once; the resolvers it returns, by
// Route.String(), read the same settings again without error. Nil when no
// rule has options. Errors: a usage error naming the route.
func RouteResolvers[C any](r *settings.Resolver, routes route.Routes, base C, read func(*settings.Resolver, *C), check func(C) error) (map[string]*settings.Resolver, error) {
	byRoute := map[string]*settings.Resolver{}
	for _, rt := range routes {
		if len(rt.Options) == 0 {
			continue
		}
		rr := r.ForRoute(rt)
		c := base
		read(rr, &c)
		err := rr.Err()
		if err == nil {
			err = check(c)
		}
		if err != nil {
			return nil, UsageErrorf("route %s: %w", rt, err)
		}
		byRoute[rt.String()] = rr
	}
	if len(byRoute) == 0 {
		return nil, nil
	}
	return byRoute, nil
}
