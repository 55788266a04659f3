ALTER TABLE "engine_documents" ADD COLUMN "sealed_sha256" text;--> statement-breakpoint
CREATE INDEX "engine_documents_sealed_sha256_idx" ON "engine_documents" USING btree ("sealed_sha256");