import type { Db } from '../../db/client.js';
import { productsPage } from '../../web/dashboard/products.js';
import type { ProductsService } from '../account/products.service.js';
import { sessionContext } from './dashboard-http.js';
import type { DashboardSection } from './dashboard.routes.js';

/**
 * GET /dashboard/products: PRODUCT_ID and whether this account enabled it. Enabling is SPEC.md's
 * POST /v1/account/products/{product}/enable, called by dashboard.js with the session cookie, so the
 * dashboard and a wallet enroll through the same route and the same audit row.
 */
export function productPagesSection(deps: { db: Db; products: Pick<ProductsService, 'list'>; productId: string }): DashboardSection {
  return (kit) => async (app) => {
    app.get('/dashboard/products', { config: { dashboard: 'session' } }, async (request, reply) => {
      const enrolled = await deps.products.list(deps.db, sessionContext(request).actor);
      const mine = enrolled.find((p) => p.product === deps.productId);
      return kit.render(request, reply, { title: 'Products', active: 'products', body: productsPage({ productId: deps.productId, enabledAt: mine?.enabledAt ?? null }) });
    });
  };
}
