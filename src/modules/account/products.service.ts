import type { DbOrTx, Tx } from '../../db/client.js';
import type { Actor, RequestContext } from '../../context.js';
import { AppError } from '../../errors.js';
import type { AuditService } from '../audit/audit.service.js';
import type { TProductEnrollment } from './account.schemas.js';
import type { CustomerProductRow, ProductsRepo } from './products.repo.js';

const toDto = (row: CustomerProductRow): TProductEnrollment => ({ product: row.product, enabled: true, enabledAt: row.enabledAt.toISOString() });

/** x402 pays per call and has no account to enroll or read; checked on `via` so the x402 resolver needs nothing more. */
function refuseX402(actor: Actor): void {
  if (actor.via === 'x402') throw new AppError('X402_NOT_APPLICABLE', 'Product enrollment belongs to an account: sign in with a wallet JWT (or use an API key to read it), not an x402 payment');
}

/** Product enrollment: the one product this server offers is PRODUCT_ID. */
export function createProductsService(deps: { repo: ProductsRepo; audit: Pick<AuditService, 'customer'>; productId: string }) {
  return {
    /**
     * Idempotent: the first call enrolls, every later one answers the same body. A wallet JWT or the
     * dashboard session may enable; an API key may not, since keys are minted for integrations and
     * enrollment is the account holder's decision.
     */
    async enable(tx: Tx, ctx: RequestContext, product: string): Promise<TProductEnrollment> {
      refuseX402(ctx.actor);
      if (ctx.actor.via === 'api_key') {
        throw new AppError('FORBIDDEN', 'Enabling a product needs the account holder: sign in with the wallet (JWT) or enable it in the dashboard; API keys cannot enable products');
      }
      if (product !== deps.productId) throw new AppError('PRODUCT_NOT_FOUND', `No product "${product}"; this server offers "${deps.productId}"`, { product });
      const { row, created } = await deps.repo.enable(tx, ctx.actor.customerId, product);
      if (created) await deps.audit.customer(tx, ctx, { action: 'product.enable', resourceType: 'product', resourceId: product });
      return toDto(row);
    },

    async list(db: DbOrTx, actor: Actor): Promise<TProductEnrollment[]> {
      refuseX402(actor);
      return (await deps.repo.list(db, actor.customerId)).map(toDto);
    },
  };
}

export type ProductsService = ReturnType<typeof createProductsService>;
