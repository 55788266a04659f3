CREATE TABLE "sealed_document_versions" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"document_id" uuid NOT NULL,
	"sealed_sha256" text NOT NULL,
	"replaced_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "engine_documents" ADD COLUMN "archive_expires_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "sealed_document_versions" ADD CONSTRAINT "sealed_document_versions_document_id_engine_documents_id_fk" FOREIGN KEY ("document_id") REFERENCES "public"."engine_documents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "sealed_document_versions_sealed_sha256_idx" ON "sealed_document_versions" USING btree ("sealed_sha256");--> statement-breakpoint
CREATE INDEX "sealed_document_versions_document_id_idx" ON "sealed_document_versions" USING btree ("document_id");--> statement-breakpoint
CREATE INDEX "engine_documents_archive_expires_at_idx" ON "engine_documents" USING btree ("archive_expires_at");