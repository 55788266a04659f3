-- Issue 32, item 2: only a verified address names the account a sign-in of that address reaches.
ALTER TABLE "customers" ADD COLUMN "email_verified" boolean DEFAULT false NOT NULL;--> statement-breakpoint
-- Existing accounts. Proven: the operator's (POST /ops/customers) and an emailed link's sign-ups. Not
-- known: an OpenID Connect sign-up, since whether its provider verified the address was never kept (an
-- unverified one is the trap this fixes); those stay unverified, their identities still sign in, and
-- the first sign-in whose provider verifies the address marks it. Proven too: an account that an
-- emailed link or a second identity (bound only with a verified address) already signed into, since
-- the address's owner already uses it. Wallet accounts have no address of their own.
UPDATE "customers" c SET "email_verified" = true
WHERE c."wallet_address" IS NULL
  AND (
    NOT EXISTS (SELECT 1 FROM "audit_log" a WHERE a."customer_id" = c."id" AND a."action" = 'customer.sign_up' AND a."metadata"->>'method' = 'oidc')
    OR EXISTS (SELECT 1 FROM "audit_log" a WHERE a."customer_id" = c."id" AND a."action" = 'dashboard.sign_in' AND a."metadata"->>'method' = 'email')
    OR (SELECT count(*) FROM "customer_identities" i WHERE i."customer_id" = c."id") > 1
  );
